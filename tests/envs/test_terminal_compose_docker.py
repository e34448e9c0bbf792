"""A compose task with a database sidecar end to end (``tests/fixtures/terminal/tb2-stock-db``):
``tasks check`` under ``--no-network`` (oracle 1, do-nothing 0), the agent's image built
without what ``.dockerignore`` leaves out, and a run killed with SIGKILL whose containers
and network ``gem-eval sandbox cleanup`` removes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gem_eval.sandbox import cleanup
from tests.e2e.test_run_cli import ROOT, gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply, ToolCallSpec

pytestmark = pytest.mark.docker

FIXTURE = ROOT / "tests" / "fixtures" / "terminal" / "tb2-stock-db"
IMAGE_MAP = ["--image-map", f"python:3*={ROOT / 'tasks' / 'terminal' / 'base'}"]


def suite(tmp_path: Path, task: Path = FIXTURE) -> Path:
    path = tmp_path / "suite.yaml"
    item = f"  - id: t\n    env: terminal:Task-v0\n    args: {{path: {task}}}\n"
    path.write_text(f"name: compose\ntasks:\n{item}")
    return path


def leftovers(run_id: str) -> tuple[list[Any], list[Any]]:
    return (
        cleanup.find(run_id, include_live=True),
        cleanup.find_networks(run_id, include_live=True),
    )


def test_tasks_check_passes_and_leaves_nothing(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = gem_eval(
        "tasks", "check", str(suite(tmp_path)), "-q", *IMAGE_MAP, results=results, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "1/1 tasks healthy" in out and "│ t │ 1 │ 0 │ ok │" in out  # oracle 1, do-nothing 0
    [run_dir] = run_dirs(results)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    [sandbox] = manifest["resources"]["sandboxes"].values()
    assert sandbox["sidecars"].startswith("db: gem-eval/task:")
    assert "internal" in sandbox["network"]  # the task does not allow the internet
    assert leftovers(manifest["run_id"]) == ([], [])


def test_no_network_makes_a_task_that_allows_the_internet_internal(tmp_path: Path) -> None:
    task = tmp_path / "tb2-stock-db"
    shutil.copytree(FIXTURE, task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("allow_internet = false", "allow_internet = true"))
    for flags, route in (([], "route out"), (["--no-network"], "no route out")):
        results = tmp_path / f"results{len(flags)}"
        done = gem_eval(
            "run", "--suite", str(suite(tmp_path, task)), "--model", "oracle", "-q", *flags,
            *IMAGE_MAP, results=results, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        [run_dir] = run_dirs(results)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        [sandbox] = manifest["resources"]["sandboxes"].values()
        assert sandbox["network"].endswith(f"({'internal' if flags else 'bridge'}, {route})")
        [record] = records(run_dir)
        assert record["score"] == 1.0
        assert leftovers(manifest["run_id"]) == ([], [])


def test_a_run_killed_with_sigkill_then_sandbox_cleanup(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    # The agent looks at its directory and the database's host name, again and again.
    look = "ls -A /app; getent hosts db >/dev/null && echo db-resolves"
    openai_server.handler = lambda _: Reply(tool_calls=[ToolCallSpec("bash", {"command": look})])
    openai_server.latency = 0.2
    results = tmp_path / "results"
    args = ["run", "--suite", str(suite(tmp_path)), "--model", "openai/fake", "-q", *IMAGE_MAP]
    run = subprocess.Popen(
        [sys.executable, "-m", "gem_eval", *args, "--model-base-url", openai_server.base_url],
        cwd=ROOT,
        env={**os.environ, "GEM_EVAL_RESULTS": str(results)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while len(openai_server.requests) < 3 and time.monotonic() < deadline:
            assert run.poll() is None, run.communicate()
            time.sleep(0.2)
        run.kill()  # SIGKILL: no cleanup of its own
        run.wait(30)
    finally:
        if run.poll() is None:
            run.kill()
    said = [
        str(m["content"])
        for m in openai_server.requests[-1].body["messages"]
        if m["role"] == "tool"
    ]
    listing = said[0].split()
    # .dockerignore keeps the database's context and the compose file out of the image.
    assert "notes.txt" in listing and "Dockerfile" in listing
    assert "db" not in listing and "docker-compose.yaml" not in listing
    assert "db-resolves" in listing
    [run_dir] = run_dirs(results)
    run_id = json.loads((run_dir / "manifest.json").read_text())["run_id"]
    containers, networks = leftovers(run_id)
    assert len(containers) == 2 and len(networks) == 1
    done = gem_eval("sandbox", "cleanup", "--run", run_id, results=results)
    assert done.returncode == 0, done.stderr
    assert "removed 2 container(s) and 1 network(s)" in done.stdout
    assert leftovers(run_id) == ([], [])
