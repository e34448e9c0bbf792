"""``gem-eval run`` while its Docker daemon restarts: episodes in flight are lost to the
engine (``infra_error``), queued ones wait for it and are scored, and nothing carrying
the run's label outlives the run. The daemon is a second one of the test's own (the
machine's is shared), reached through ``DOCKER_HOST``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_run_cli import ROOT, gem_eval, records, run_dirs
from tests.fixtures import second_dockerd
from tests.fixtures.openai_server import FakeOpenAIServer, tool_loop

pytestmark = [pytest.mark.docker, pytest.mark.slow]

EPISODES = 8
IN_FLIGHT = 2  # max_sandboxes: the episodes holding a container when the daemon stops
SUITE = f"""
name: restarting
tasks:
  - id: guess-with-python
    env: game:GuessTheNumber-v0-easy
    tools: [python]
    sandbox: {{type: docker, memory: 256m, max_sandboxes: {IN_FLIGHT}}}
    samples: {EPISODES}
    limits: {{max_turns: 12}}
"""


@pytest.fixture(scope="module")
def daemon() -> Iterator[second_dockerd.SecondDockerd]:
    with second_dockerd.for_tests() as started:
        yield started


@pytest.fixture
def running(daemon: second_dockerd.SecondDockerd) -> Iterator[second_dockerd.SecondDockerd]:
    if daemon.process is None:
        daemon.start()
    yield daemon
    if daemon.process is None:
        daemon.start()
    ids = daemon.docker("ps", "-aq").stdout.split()
    if ids:
        daemon.docker("rm", "-f", *ids)


def start_run(
    server: FakeOpenAIServer, daemon: second_dockerd.SecondDockerd, tmp: Path, **env: str
) -> subprocess.Popen[str]:
    suite = tmp / "restarting.yaml"
    suite.write_text(SUITE)
    args = ["run", "--suite", str(suite), "--model", "openai/fake", "-q"]
    args += ["--model-base-url", server.base_url]
    return subprocess.Popen(
        [sys.executable, "-m", "gem_eval", *args],
        cwd=ROOT,
        env={**os.environ, **daemon.env, "GEM_EVAL_RESULTS": str(tmp), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop_mid_run(daemon: second_dockerd.SecondDockerd, proc: subprocess.Popen[str]) -> None:
    """Stop the daemon once the run's episodes are under way in their containers."""
    deadline = time.monotonic() + 120
    while not daemon.containers("gem-eval.managed=1"):
        assert proc.poll() is None and time.monotonic() < deadline, "no container started"
        time.sleep(0.1)
    time.sleep(2)  # the first episodes are mid-way: interpreters running in containers
    daemon.stop()


def run_id_of(tmp: Path) -> str:
    [run] = run_dirs(tmp)
    return str(json.loads((run / "manifest.json").read_text())["run_id"])


def test_a_daemon_restart_costs_only_the_episodes_in_flight(
    openai_server: FakeOpenAIServer, running: second_dockerd.SecondDockerd, tmp_path: Path
) -> None:
    openai_server.handler = tool_loop(2, "7")  # two python calls before every guess
    openai_server.latency = 0.3
    proc = start_run(openai_server, running, tmp_path)
    try:
        stop_mid_run(running, proc)
        time.sleep(5)  # queued episodes reach for a sandbox while it is away
        running.start()
        back = time.time()
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 3, err  # some episodes were not scored
    [run] = run_dirs(tmp_path)
    recs = records(run)
    assert len(recs) == EPISODES
    lost = [r for r in recs if r["outcome"] == "infra_error"]
    assert 1 <= len(lost) <= IN_FLIGHT, [r["trajectory"]["error"] for r in lost]
    assert all(r["finished_at"] < back for r in lost)  # they died with the daemon
    played = [r for r in recs if r["outcome"] != "infra_error"]
    assert {r["outcome"] for r in played} == {"completed"}
    # Queued while the engine was away, played once it was back.
    assert sum(r["finished_at"] > back for r in played) >= EPISODES - 2 * IN_FLIGHT
    assert "the Docker engine is unreachable" in err and "the Docker engine is back" in err
    assert running.containers(f"gem-eval.run={run_id_of(tmp_path)}") == []


def test_an_engine_that_never_returns_ends_the_run_with_the_cleanup_command(
    openai_server: FakeOpenAIServer, running: second_dockerd.SecondDockerd, tmp_path: Path
) -> None:
    openai_server.handler = tool_loop(2, "7")
    openai_server.latency = 0.3
    waits = {"GEM_EVAL_ENGINE_WAIT_S": "5", "GEM_EVAL_CLEANUP_WAIT_S": "2"}
    proc = start_run(openai_server, running, tmp_path, **waits)
    try:
        stop_mid_run(running, proc)
        _, err = proc.communicate(timeout=300)  # bounded: it ends without the engine
    finally:
        proc.kill()
    assert proc.returncode == 3, err
    recs = records(run_dirs(tmp_path)[0])
    assert len(recs) == EPISODES and {r["outcome"] for r in recs} == {"infra_error"}
    waited = [r for r in recs if "GEM_EVAL_ENGINE_WAIT_S" in r["trajectory"]["error"]]
    assert len(waited) >= EPISODES - 2 * IN_FLIGHT  # the queued ones waited, then gave up
    run_id = run_id_of(tmp_path)
    command = f"gem-eval sandbox cleanup --run {run_id}"
    assert sum(command in line for line in err.splitlines()) == 1, err
    running.start()  # later, the engine is back: the containers the line warned of
    label = f"gem-eval.run={run_id}"
    assert running.containers(label)
    result = gem_eval(*command.split()[1:], results=tmp_path, env=running.env)
    assert result.returncode == 0, result.stderr
    assert running.containers(label) == []
