"""``gem-eval run`` with tools in Docker sandboxes: results, and no leaked containers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import as_from_a_terminal
from tests.e2e.test_run_cli import ROOT, gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, tool_loop

pytestmark = pytest.mark.docker

SUITE = """
name: sandboxed
tasks:
  - id: guess-with-python
    env: game:GuessTheNumber-v0-easy
    tools: [python]
    sandbox: {type: docker, memory: 256m, max_sandboxes: 3}
    samples: {samples}
    limits: {{max_turns: 12}}
"""


def write_suite(tmp_path: Path, samples: int) -> Path:
    path = tmp_path / "sandboxed.yaml"
    path.write_text(SUITE.replace("{samples}", str(samples)).replace("{{", "{").replace("}}", "}"))
    return path


def containers_of(pid: int) -> list[str]:
    """Ids of containers (running or not) labelled as owned by process ``pid``."""
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=gem-eval.pid={pid}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def start_run(server: FakeOpenAIServer, suite: Path, results: Path) -> subprocess.Popen[str]:
    args = ["run", "--suite", str(suite), "--model", "openai/fake", "-q"]
    args += ["--model-base-url", server.base_url, "--concurrency", "3"]
    return subprocess.Popen(
        [sys.executable, "-m", "gem_eval", *args],
        cwd=ROOT,
        env={**os.environ, "GEM_EVAL_RESULTS": str(results)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_from_a_terminal,  # the tests send SIGINT as Ctrl-C
    )


def wait_for_containers(pid: int, timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = containers_of(pid)
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("the run started no container")


def test_python_tool_runs_in_containers_and_nothing_is_left(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = tool_loop(2, "7")
    suite = write_suite(tmp_path, samples=4)
    result = gem_eval(
        "run",
        "--suite",
        str(suite),
        "--model",
        "openai/fake",
        "--model-base-url",
        openai_server.base_url,
        "-q",
        results=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    [run] = run_dirs(tmp_path)
    recs = records(run)
    assert len(recs) == 4 and {r["outcome"] for r in recs} == {"completed"}
    events = [e for r in recs for s in r["trajectory"]["steps"] for e in s["tool_events"]]
    answers = sum(1 for r in recs for s in r["trajectory"]["steps"] if s["action"] is not None)
    assert len(events) == 2 * answers >= 8  # two python calls before every guess
    assert all(e["output"] == "1" for e in events)
    manifest = json.loads((run / "manifest.json").read_text())
    sandbox = next(iter(manifest["resources"]["sandboxes"].values()))
    assert sandbox["kind"] == "docker" and sandbox["image"] == "gem-eval/base:bookworm"
    assert sandbox["init"] == "gem-eval-init"  # the unkillable PID 1 the sandbox ran under
    assert sandbox["disk"] in {"per-file", "quota"}  # how its disk was bounded
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=gem-eval.run={manifest['run_id']}"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert left.stdout.split() == []


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_and_sigterm_remove_every_container(
    openai_server: FakeOpenAIServer, tmp_path: Path, stop: signal.Signals
) -> None:
    openai_server.handler = tool_loop(50, "7")  # episodes that would run for a long time
    openai_server.latency = 0.2
    proc = start_run(openai_server, write_suite(tmp_path, samples=6), tmp_path)
    try:
        wait_for_containers(proc.pid)
        time.sleep(1.0)  # episodes are mid-way: interpreters running in their containers
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert containers_of(proc.pid) == []


def test_sigkill_leaves_containers_that_cleanup_removes(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = tool_loop(50, "7")
    openai_server.latency = 0.2
    proc = start_run(openai_server, write_suite(tmp_path, samples=6), tmp_path)
    try:
        wait_for_containers(proc.pid)
    finally:
        proc.kill()  # SIGKILL: no chance to clean up
        proc.communicate(timeout=60)
    assert containers_of(proc.pid), "SIGKILL should have left the run's containers behind"
    result = gem_eval("sandbox", "cleanup", results=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "removed" in result.stdout
    assert containers_of(proc.pid) == []
