"""``gem-eval run`` with terminal tasks, end to end (the CLI in a subprocess, the oracle
as the model): the images are built before the first episode with a progress line, a
broken Dockerfile stops the run once with one line and no episode, and ``--no-network``
reaches the task's container and the manifest."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_run_cli import gem_eval, records, run_dirs

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
TB2 = ROOT / "tests" / "fixtures" / "terminal" / "tb2-count-words"
BASE = ROOT / "tasks" / "terminal" / "base"
CORPUS = "the cat and the dog\nThe bird and THE fish\nand the end\n"


def suite_with_task(tmp: Path, dockerfile: str, samples: int = 1) -> Path:
    """A suite of one TB2 task (the fixture's tests and solution) built from
    ``dockerfile``, which carries a fresh label: its image is built in this run."""
    task = tmp / "tasks" / "count-words"
    shutil.copytree(TB2, task, ignore=shutil.ignore_patterns("environment"))
    (task / "environment").mkdir()
    (task / "environment" / "corpus.txt").write_text(CORPUS)
    nonce = f"LABEL test.nonce={uuid.uuid4().hex}"
    (task / "environment" / "Dockerfile").write_text(f"{dockerfile}\n{nonce}\n")
    suite = tmp / "suite.yaml"
    suite.write_text(
        "name: policy\n"
        f"defaults:\n  sandbox:\n    image_map: {{'python:3*': {BASE}}}\n"
        f"tasks:\n  - id: tb\n    env: terminal:Task-v0\n    samples: {samples}\n"
        f"    args: {{path: {tmp / 'tasks'}}}\n"
    )
    return suite


def remove_built_images(output: str) -> None:
    """Remove the images the progress lines of ``output`` say were built."""
    from gem_eval.sandbox import docker_client

    for tag in re.findall(r"building (gem-eval/task:\w+)", output):
        with contextlib.suppress(Exception):
            docker_client.client().images.remove(tag, force=True)


def test_a_broken_dockerfile_stops_the_run_once_before_any_episode(tmp_path: Path) -> None:
    suite = suite_with_task(
        tmp_path, "FROM python:3.13-slim-bookworm\nWORKDIR /app\nCOPY no-such-file /app/", 3
    )
    result = gem_eval("run", "--suite", str(suite), "--model", "oracle", "-q", results=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    assert errors[0].startswith("error: task 'tb/count-words': building gem-eval/task:")
    assert "no-such-file" in errors[0]
    # Not three infra_errors, and no failed run: a run that never started leaves nothing.
    assert run_dirs(tmp_path) == []


def test_no_network_reaches_the_container_and_the_manifest(tmp_path: Path) -> None:
    suite = suite_with_task(tmp_path, "FROM python:3.13-slim-bookworm\nWORKDIR /app\nCOPY . /app/")
    args = ["run", "--suite", str(suite), "--model", "oracle", "--no-network", "-q"]
    result = gem_eval(*args, results=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[gem-eval] tb/count-words: building gem-eval/task:" in result.stderr  # progress
    [run_dir] = run_dirs(tmp_path)
    try:
        [record] = records(run_dir)
        assert record["score"] == 1.0  # the oracle solves it offline; graded as root
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["extra"]["options"]["no_network"] is True
        policy = manifest["resources"]["policy"]["tb/count-words"]
        assert policy["network"] is False and policy["tightened"] == ["network"]
        assert (policy["memory"], policy["user"]) == ("2048m", "root")  # the task's own

        # A resume keeps the setting without being told again.
        again = gem_eval("run", "--resume", run_dir.name, "-q", results=tmp_path)
        assert again.returncode == 0, again.stdout + again.stderr
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["extra"]["options"]["no_network"] is True
    finally:
        remove_built_images(result.stderr)
