"""``tasks check --agent NAME`` (:mod:`gem_eval.runner.health`): besides the task's health,
the agent program is set up and run in every task's container against the do-nothing
model, its turns capped, as a second run; it must start, call the model and score 0, and
a task it cannot play is named. An agent that cannot play the suite's tasks at all is
refused before any episode."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gem_eval.agents.base import AgentEpisode, AgentError, AgentResult
from gem_eval.agents.registry import AGENTS, AgentInfo, register
from gem_eval.errors import UserError
from gem_eval.runner.health import AGENT_CHECK_TURNS, check_tasks
from gem_eval.runner.session import RunOptions
from tests.agents.fake_agent import FakeCli

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tests" / "fixtures" / "harbor_jobs" / "tasks"
BUNDLED = ["terminal/sort-downloads", "terminal/git-lost-commit"]
"""Two bundled Terminal-Bench tasks (no network: gem-eval brings Terminus-2's tools in)."""


class CannotInstall(FakeCli):
    """An agent whose install fails in one of the tasks' containers."""

    name = "cannot-install"

    async def play(self, episode: AgentEpisode) -> AgentResult:
        if episode.task.id.endswith("count-lines"):
            raise AgentError(f"{self.name}: its install failed (exit 1)", infra=True)
        return await super().play(episode)


@pytest.fixture(autouse=True)
def fake_agents() -> Iterator[None]:
    for name, cls in (("fake-cli", "FakeCli"), ("cannot-install", "CannotInstall")):
        module = "tests.agents.fake_agent" if cls == "FakeCli" else __name__
        register(AgentInfo(name, f"{module}:{cls}", "tests", ("terminal",), "its calls"))
    yield
    for name in ("fake-cli", "cannot-install"):
        AGENTS.pop(name, None)


def terminal_suite(tmp_path: Path) -> Path:
    """The two Harbor fixture tasks (a reference solution each) on gem-eval's base image."""
    path = tmp_path / "tb.yaml"
    base = ROOT / "tasks" / "terminal" / "base"
    path.write_text(
        "name: tb\ndefaults:\n"
        f"  sandbox: {{image_map: {{'python:3*': {base}}}}}\n"
        f"tasks:\n  - id: t\n    env: terminal:Task-v0\n    args: {{path: {TASKS}}}\n"
    )
    return path


def test_an_agent_that_cannot_play_the_tasks_is_refused_before_any_episode(
    tmp_path: Path,
) -> None:
    results = tmp_path / "r"
    with pytest.raises(UserError, match="cannot play task"):
        asyncio.run(check_tasks("smoke", results, RunOptions(), agent="fake-cli"))
    with pytest.raises(UserError, match=r"unknown agent 'fake-clj'.*fake-cli"):
        asyncio.run(check_tasks("smoke", results, RunOptions(), agent="fake-clj"))
    assert not results.exists()  # nothing played, nothing written


def test_the_report_names_each_task_the_agent_cannot_play_on_a_line_of_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gem_eval.cli.tasks import _print_report
    from gem_eval.runner.health import AgentCheck, HealthReport, TaskHealth

    played = AgentCheck(0.0, 3, 1.5, 0.8, None)
    failed = AgentCheck(None, 0, None, None, "infra_error: AgentError: its install failed")
    report = HealthReport(
        "run-a",
        [
            TaskHealth("t/ok", 1.0, 0.0, None, agent=played),
            TaskHealth("t/bad", 1.0, 0.0, None, agent=failed),
        ],
        agent="fake-cli",
        agent_run_id="run-b",
    )
    assert [h.task_id for h in report.broken] == ["t/bad"]
    _print_report(report)
    out = capsys.readouterr().out
    assert "2/2 tasks healthy; fake-cli played 1/2" in " ".join(out.split())
    assert "0 (3 calls, setup 1.5 s, run 0.8 s)" in out
    lines = [line for line in out.splitlines() if line.startswith("fake-cli cannot play")]
    assert lines == ["fake-cli cannot play t/bad: infra_error: AgentError: its install failed"]


@pytest.mark.docker
def test_the_agent_plays_each_task_against_the_do_nothing_model(tmp_path: Path) -> None:
    from gem_eval.store import RunDir

    results = tmp_path / "r"
    report = asyncio.run(
        check_tasks(str(terminal_suite(tmp_path)), results, RunOptions(), agent="fake-cli")
    )
    assert report.agent == "fake-cli" and not report.broken
    assert {h.task_id for h in report.tasks} == {"t/count-lines", "t/hello-file"}
    for h in report.tasks:
        assert h.healthy and (h.oracle, h.noop) == (1.0, 0.0)
        assert h.agent is not None and h.agent.ok
        # It ran each command the do-nothing model "said" ("Done."), up to the cap.
        assert (h.agent.reward, h.agent.calls) == (0.0, AGENT_CHECK_TURNS)
    assert report.agent_run_id is not None and report.agent_run_id != report.run_id
    run = RunDir.open(results, report.agent_run_id)
    manifest = run.read_manifest()
    assert manifest.extra["agent_check"] == {
        "agent": "fake-cli",
        "max_turns": AGENT_CHECK_TURNS,
        "health_run": report.run_id,
    }
    assert {(t.agent, t.agent_max_turns) for t in manifest.tasks} == {
        ("fake-cli", AGENT_CHECK_TURNS)
    }
    records = list(run.records())
    assert {(r.model, r.outcome, r.score) for r in records} == {("noop", "completed", 0.0)}
    assert {r.trajectory.agent for r in records if r.trajectory} == {"fake-cli"}


@pytest.mark.docker
def test_a_task_the_agent_cannot_set_up_in_is_named(tmp_path: Path) -> None:
    report = asyncio.run(
        check_tasks(
            str(terminal_suite(tmp_path)), tmp_path / "r", RunOptions(), agent="cannot-install"
        )
    )
    by_task = {h.task_id: h for h in report.tasks}
    assert [h.task_id for h in report.broken] == ["t/count-lines"]
    failed = by_task["t/count-lines"]
    assert failed.healthy  # the task is sound: its agent is not
    assert failed.agent is not None and failed.agent.reward is None
    assert failed.agent.problem == (
        "infra_error: AgentError: cannot-install: its install failed (exit 1)"
    )
    assert by_task["t/hello-file"].agent is not None and by_task["t/hello-file"].agent.ok


@pytest.mark.docker
@pytest.mark.harbor
def test_tasks_check_with_terminus2_on_two_bundled_tasks(tmp_path: Path) -> None:
    """The CLI: Harbor's Terminus-2 sets up in both tasks' containers (tools brought in:
    no network), gets "Done." three times, answers each with its parse error, and
    scores 0; the tasks' health as without --agent."""
    results = tmp_path / "r"
    env = {**os.environ, "GEM_EVAL_RESULTS": str(results), "COLUMNS": "250"}
    selection = [arg for task in BUNDLED for arg in ("--task", task)]
    args = ["tasks", "check", "terminal-bench", *selection, "--agent", "terminus-2", "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "gem_eval", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "2/2 tasks healthy; terminus-2 played 2/2" in out
    assert "with terminus-2 in each task's container against the do-nothing model" in out
    assert "cannot play" not in out

    manifests = [p / "manifest.json" for p in results.iterdir() if p.is_dir()]
    [agent_run] = [m.parent for m in manifests if "agent_check" in m.read_text()]
    lines = (agent_run / "episodes.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    assert sorted(r["task_id"] for r in records) == sorted(BUNDLED)
    for record in records:
        assert (record["outcome"], record["score"]) == ("completed", 0.0)
        traj = record["trajectory"]
        assert traj["agent"] == "terminus-2" and len(traj["steps"]) == AGENT_CHECK_TURNS
        assert all(s["output"]["text"] == "Done." for s in traj["steps"])
        run = traj["agent_run"]
        assert run["provided"] == ["tmux", "asciinema"] and run["setup_s"] > 0
        assert run["context"]["metadata"]["n_episodes"] == AGENT_CHECK_TURNS
        assert "model_limits" not in run  # litellm knows no model "noop"
        # Terminus-2's answer to "Done.": its parse error, asked again.
        second = traj["steps"][1]["info"]["request"]["messages"][-1]["content"]
        assert "Previous response had parsing errors" in second
