"""``gem-eval run --suite terminal-bench|mcpmark`` and ``gem-eval tasks check`` end to
end: the CLI in a subprocess, a scripted model behind the fake OpenAI server, real
containers. Nothing may outlive a run."""

from __future__ import annotations

import base64
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from gem_eval.envs.terminal.layout import find_tasks, load_task
from gem_eval.sandbox import cleanup
from tests.e2e.test_run_cli import ROOT, gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply, ToolCallSpec

pytestmark = pytest.mark.docker

FIXTURES = ROOT / "tests" / "fixtures" / "terminal"
BASE = ROOT / "tasks" / "terminal" / "base"


def first_user(request: dict[str, Any]) -> str:
    return str(next(m for m in request["messages"] if m["role"] == "user")["content"])


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def solution_command(task_dir: Path) -> str:
    """One bash command that recreates the task's reference solution where the oracle
    would put it and runs it: what an agent that knew the answer would type."""
    task = load_task(task_dir)
    assert task.solution is not None, task_dir
    if task.solution.is_file():  # TB1 solution.sh
        files, target, script = {"solution.sh": task.solution}, "/oracle", "solution.sh"
    else:
        files = {
            str(p.relative_to(task.solution)): p for p in task.solution.rglob("*") if p.is_file()
        }
        target, script = "/solution", "solve.sh"
    steps = [f"rm -rf {target}"]
    for name, path in files.items():
        data = base64.b64encode(path.read_bytes()).decode()
        steps.append(
            f"mkdir -p $(dirname {target}/{name}) && echo {data} | base64 -d > {target}/{name}"
        )
    steps.append(f"bash {target}/{script}")
    return " && ".join(steps)


def keystroke_solved(task_dir: Path) -> bool:
    """The task's reference solution is keystrokes (TB1 ``solution.yaml``): for a terminal,
    not for the bash tool."""
    solution = load_task(task_dir).solution
    return solution is not None and solution.suffix == ".yaml"


def terminal_solver(task_dirs: list[Path]) -> Any:
    """Run the matching task's solution with the bash tool, then say it is done (at once,
    for a task whose solution is keystrokes)."""
    by_instruction = {load_task(d).instruction: d for d in task_dirs if not keystroke_solved(d)}

    def handler(request: dict[str, Any]) -> Reply:
        prompt = first_user(request)
        task = next((d for text, d in by_instruction.items() if text in prompt), None)
        if task is None or tool_results(request):
            return Reply("Done.")
        return Reply(tool_calls=[ToolCallSpec("bash", {"command": solution_command(task)})])

    return handler


def run(
    server: FakeOpenAIServer, suite: str, tmp: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    result = gem_eval(
        "run", "--suite", suite, "--model", "openai/fake", "--model-base-url", server.base_url,
        "-q", "--concurrency", "4", *extra, results=tmp, timeout=900, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    [run_dir] = run_dirs(tmp)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert cleanup.find(manifest["run_id"], include_live=True) == []
    return records(run_dir), manifest


def test_the_terminal_bench_suite_with_a_model_that_solves_every_task(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    tasks = find_tasks(ROOT / "tasks" / "terminal")
    assert len(tasks) >= 10
    openai_server.handler = terminal_solver(tasks)
    recs, manifest = run(openai_server, "terminal-bench", tmp_path)
    assert len(recs) == len(tasks)
    failed = {r["task_id"]: r["trajectory"]["steps"][-1]["info"] for r in recs if r["score"] != 1.0}
    assert failed == {}
    for rec in recs:
        assert rec["outcome"] == "completed" and rec["turns"] == 2
        [event] = rec["trajectory"]["steps"][0]["tool_events"]
        assert event["name"] == "bash" and not event["is_error"]
        # Where its time went: each phase timed, together no more than the episode took.
        phases = rec["phases"]
        assert {"sandbox_start", "setup", "agent", "verifier", "audit", "teardown"} <= set(phases)
        assert min(phases[p] for p in ("sandbox_start", "agent", "verifier", "audit")) > 0
        assert sum(phases.values()) <= rec["finished_at"] - rec["started_at"] + 0.01
    layouts = {r["trajectory"]["steps"][-1]["info"]["layout"] for r in recs}
    assert layouts == {"tb1", "tb2"}
    assert "bash" in manifest["resources"]["tools"]


def test_an_outside_task_directory_runs_with_the_image_map_flag(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """TERMINAL_BENCH_TASKS points the suite at tasks written elsewhere; --image-map
    supplies their registry base images."""
    openai_server.handler = terminal_solver(find_tasks(FIXTURES))
    env = {"TERMINAL_BENCH_TASKS": str(FIXTURES)}
    recs, _ = run(
        openai_server, "terminal-bench", tmp_path,
        "--image-map", f"ghcr.io/laude-institute/*={BASE}", env=env,
    )  # fmt: skip
    assert {r["task_id"]: r["score"] for r in recs} == {
        f"terminal/{task.name}": 0.0 if keystroke_solved(task) else 1.0
        for task in FIXTURES.iterdir()
        if task.is_dir()
    }


def test_tasks_check_passes_healthy_tasks_and_names_a_broken_one(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    for name in ("tb1-sum-numbers", "tb2-count-words"):  # one task of each layout
        shutil.copytree(FIXTURES / name, tasks / name)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: fixtures\ntasks:\n  - id: t\n    env: terminal:Task-v0\n"
        f"    args: {{path: {tasks}}}\n"
    )
    image_map = ["--image-map", f"python:3*={BASE}", "--image-map", f"ghcr.io/*={BASE}"]
    healthy = gem_eval("tasks", "check", str(suite), "-q", *image_map, results=tmp_path / "r1")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "2/2 tasks healthy" in healthy.stdout

    # A test that passes on the untouched state: the do-nothing agent passes too.
    test_sh = tasks / "tb2-count-words" / "tests" / "test.sh"
    test_sh.write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    # A reference solution that no longer solves the task.
    (tasks / "tb1-sum-numbers" / "solution.sh").write_text("#!/bin/bash\necho 0 > /app/sum.txt\n")
    broken = gem_eval("tasks", "check", str(suite), "-q", *image_map, results=tmp_path / "r2")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    out = " ".join(broken.stdout.split())
    assert "0/2 tasks healthy" in out
    assert "do-nothing passed (reward 1)" in out and "oracle failed" in out


# The three edits the filesystem task `update_config` asks for (file, old, new).
CONFIG_EDITS = [
    ("/data/settings.ini", "port = 5432", "port = 6543"),
    ("/data/settings.ini", "format = csv", "format = parquet"),
    (
        "/data/pipeline.yaml",
        "shop_production\n  batch_size: 64",
        "shop_production\n  batch_size: 256",
    ),
]


def mcp_agent(request: dict[str, Any]) -> Reply:
    """Solves the filesystem task `update_config` with edit_file; on every other task
    looks around once with a read-only tool and stops."""
    prompt, done = first_user(request), tool_results(request)
    names = {t["function"]["name"] for t in request.get("tools", [])}
    if done:
        return Reply("Done.")
    if "nightly export job" in prompt:
        calls = [
            ToolCallSpec("edit_file", {"path": path, "edits": [{"oldText": old, "newText": new}]})
            for path, old, new in CONFIG_EDITS
        ]
        return Reply(tool_calls=calls)
    if "list_allowed_directories" in names:
        return Reply(tool_calls=[ToolCallSpec("list_allowed_directories", {})])
    return Reply(tool_calls=[ToolCallSpec("list_tables", {})])


def test_the_mcpmark_suite_runs_every_task_through_its_mcp_server(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = mcp_agent
    recs, manifest = run(openai_server, "mcpmark", tmp_path)
    assert len(recs) >= 10
    assert all(r["outcome"] == "completed" for r in recs)
    for rec in recs:
        events = [e for s in rec["trajectory"]["steps"] for e in s["tool_events"]]
        assert events and not any(e["is_error"] for e in events), rec["task_id"]
    scores = {r["task_id"]: r["score"] for r in recs}
    assert scores.pop("mcp/filesystem/messy_project/update_config") == 1.0
    assert set(scores.values()) == {0.0}
    services = manifest["resources"]["services"]
    assert "@modelcontextprotocol/server-filesystem@" in services["filesystem"]["package.json"]
    assert "mcp==" in services["postgres"]["requirements.txt"]


def test_sigterm_mid_run_leaves_no_container_database_or_server(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Services and MCP servers live in the episode's container: removing it on SIGTERM
    ends PostgreSQL and the servers too."""
    import os
    import signal
    import subprocess
    import sys

    from tests.e2e.test_sandbox_cli import containers_of, wait_for_containers

    def explorer(request: dict[str, Any]) -> Reply:  # looks around for ever
        names = {t["function"]["name"] for t in request.get("tools", [])}
        tool = "list_tables" if "list_tables" in names else "list_allowed_directories"
        return Reply(tool_calls=[ToolCallSpec(tool, {})])

    openai_server.handler, openai_server.latency = explorer, 0.2
    args = ["run", "--suite", "mcpmark", "--model", "openai/fake", "-q", "--epochs", "2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gem_eval", *args, "--model-base-url", openai_server.base_url],
        cwd=ROOT,
        env={
            **os.environ,
            "GEM_EVAL_RESULTS": str(tmp_path),
            "MCPMARK_TASKS": str(ROOT / "tests" / "fixtures" / "mcp"),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_containers(proc.pid, timeout=120)
        deadline = time.monotonic() + 60
        while len(openai_server.requests) < 6 and time.monotonic() < deadline:
            time.sleep(0.1)  # episodes are mid-way: servers answering tool calls
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert containers_of(proc.pid) == []
    [run_dir] = run_dirs(tmp_path)
    outcomes = {r["outcome"] for r in records(run_dir)}
    assert outcomes <= {"cancelled", "truncated", "completed"}
