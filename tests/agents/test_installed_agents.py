"""``--agent mini-swe-agent`` and ``--agent qwen-code``: the installed agents play the
bundled Terminal-Bench suite through ``gem-eval run`` against the fixture model server.

Each agent's own program, installed in the task's container, calls the run's endpoint
(the tasks have no network, and ``--no-network`` is given: the container reaches its
endpoint only, as ``test_agent_reach`` checks with a probe), which forwards to the
fixture server; the server is scripted to solve one task and fail the other. The record
keeps every call the agent made, its turns and files, its setup and run times apart,
and the manifest its pinned version and packages; a spent ``--max-cost`` stops its
calls and cancels the episode; a model server answering 500 stops it at once, the
episode an ``infra_error``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply, ToolCallSpec

ROOT = Path(__file__).resolve().parents[2]
SOLVED, FAILED = "terminal/sort-downloads", "terminal/git-lost-commit"
SOLUTION = (ROOT / "tasks" / "terminal" / "sort-downloads" / "solution" / "solve.sh").read_text()
DONE = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini-swe-agent's end of task
AGENTS = {
    # agent: (its shell tool, the version pinned, the files it leaves)
    "mini-swe-agent": (
        "bash",
        "2.4.6",
        {"mini-swe-agent.trajectory.json", "mini-swe-agent.txt", "trajectory.json"},
    ),
    "qwen-code": ("run_shell_command", "0.24.4", {"qwen-code.txt", "trajectory.json"}),
}


def task_of(body: dict[str, Any]) -> str:
    """Which task a request is about (its instruction is in the messages)."""
    return SOLVED if "/app/downloads" in json.dumps(body.get("messages")) else FAILED


def scripted(agent: str, *, forever: bool = False) -> Any:
    """The agent's model: the solution (sort-downloads) or a look around (elsewhere) with
    its shell tool, then done (mini-swe-agent by its command, Qwen Code by a reply
    without tools); ``forever``: looking around, never done."""
    tool = AGENTS[agent][0]

    def answer(body: dict[str, Any]) -> Reply:
        acted = sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
        if acted == 0 or forever:
            solve = task_of(body) == SOLVED and not forever
            command = f"bash <<'EOF'\n{SOLUTION}\nEOF" if solve else "ls /app"
            return Reply("On it.", tool_calls=[ToolCallSpec(tool, {"command": command})])
        if agent == "mini-swe-agent":
            return Reply("Done.", tool_calls=[ToolCallSpec(tool, {"command": DONE})])
        return Reply("Done.")

    return answer


def run(
    server: FakeOpenAIServer,
    tmp_path: Path,
    agent: str,
    *args: str,
    exits: tuple[int, ...] = (0, 4),
) -> Path:
    command = ["run", "--suite", "terminal-bench", "--task", SOLVED, "--task", FAILED]
    command += ["--agent", agent, "--model-base-url", server.base_url, "-q", *args]
    done = gem_eval(*command, results=tmp_path / "r", timeout=900)
    assert done.returncode in exits, done.stderr[-3000:] + done.stdout[-3000:]
    [run_dir] = run_dirs(tmp_path / "r")
    return run_dir


@pytest.mark.docker
@pytest.mark.harbor
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_an_installed_agent_plays_the_bundled_suite(
    agent: str, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    _, version, files = AGENTS[agent]
    openai_server.handler = scripted(agent)
    run_dir = run(
        openai_server, tmp_path, agent, "--model", "openai/fake", "--model-backend", "openai",
        "--no-network",
    )  # fmt: skip
    played = {str(r["task_id"]): r for r in records(run_dir)}
    assert {t: (r["outcome"], r["score"]) for t, r in played.items()} == {
        SOLVED: ("completed", 1.0),
        FAILED: ("completed", 0.0),
    }
    asked = [task_of(r.body) for r in openai_server.requests]
    for task, record in played.items():
        traj: dict[str, Any] = record["trajectory"]  # type: ignore[assignment]
        # Every call the agent made is a step: as many as reached the server for it.
        assert len(traj["steps"]) == asked.count(task) == 2
        assert traj["agent"] == agent
        run_info = traj["agent_run"]
        assert run_info["version"] == version and not run_info["timed_out"]
        assert 0 < run_info["install_s"] <= run_info["setup_s"] < 10 and run_info["run_s"] > 0
        first, last = run_info["turns"]
        assert first["tool_calls"][0]["name"] == AGENTS[agent][0]
        assert ("/app/downloads" in first["tool_calls"][0]["arguments"]["command"]) == (
            task == SOLVED
        )
        assert last["analysis"] == "Done."
        names = {Path(a).name for a in cast(list[str], record["attachments"])}
        assert files <= names
    manifest = json.loads((run_dir / "manifest.json").read_text())
    described = manifest["resources"]["agents"][agent]
    assert described["version"] == version and described["harbor"] == "0.26.0"
    assert (
        described["install"]["packages"][
            "mini-swe-agent" if agent == "mini-swe-agent" else "@qwen-code/qwen-code"
        ]
        == version
    )


@pytest.mark.docker
@pytest.mark.harbor
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_spent_budget_stops_an_installed_agent(
    agent: str, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = scripted(agent, forever=True)  # it would call on and on
    # A model litellm prices, served by the fixture server; one episode at a time. The
    # budget lasts a few calls (the first costs ~$0.00014 for mini-swe-agent, ~$0.0015
    # for Qwen Code's longer prompt).
    cap = 0.0004 if agent == "mini-swe-agent" else 0.004
    run_dir = run(
        openai_server, tmp_path, agent, "--model", "openai/gpt-4o-mini", "--concurrency", "1",
        "--max-cost", str(cap),
    )  # fmt: skip
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "budget_exhausted"
    [cut] = records(run_dir)  # the other episode never started
    assert (cut["outcome"], cut["score"]) == ("cancelled", None)
    traj: dict[str, Any] = cut["trajectory"]  # type: ignore[assignment]
    costs = [step["output"]["usage"]["cost_usd"] for step in traj["steps"]]
    # Every request that reached the server is a step, and none came after the call
    # that spent the budget.
    assert len(costs) == len(openai_server.requests) >= 2
    assert sum(costs[:-1]) < cap <= sum(costs)


@pytest.mark.docker
@pytest.mark.harbor
def test_a_failing_model_server_stops_an_installed_agent(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = lambda body: Fault.status(500)  # every call, every retry
    # mini-swe-agent retries a failed call until its time is up (300 s on these tasks).
    run_dir = run(
        openai_server, tmp_path, "mini-swe-agent", "--model", "openai/fake",
        "--model-backend", "openai", "--no-network", "--max-retries", "2", exits=(3,),
    )  # fmt: skip
    played = records(run_dir)
    assert {str(r["task_id"]) for r in played} == {SOLVED, FAILED}
    for record in played:
        traj: dict[str, Any] = record["trajectory"]  # type: ignore[assignment]
        assert (record["outcome"], record["score"]) == ("infra_error", None), traj["error"]
        assert str(traj["error"]).startswith("500 InternalServerError")
        assert traj["duration_s"] < 300 / 3  # stopped once the model client gave up
    # Each episode's one call and its two retries: the agent's own retries went no further.
    assert len(openai_server.requests) == 2 * 3
