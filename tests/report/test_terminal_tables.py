"""Tables in a log (output not a terminal) never cut an identifier."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from gem_eval.records import ModelSpec, RunManifest
from gem_eval.store import RunDir

ROOT = Path(__file__).resolve().parents[2]
RUN_ID = "2026-12-03T07-55-27-a-suite-with-a-rather-long-name-c318ab"
MODEL = "hosted_vllm/organisation/a-model-name-longer-than-forty-characters-v2"


def piped(*args: str, results: Path) -> str:
    """The CLI's output through a pipe, in a log 80 columns wide."""
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    done = subprocess.run(
        [sys.executable, "-m", "gem_eval", *args, "--results-dir", str(results)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_run_ids_and_models_stay_whole_in_a_log(tmp_path: Path) -> None:
    manifest = RunManifest(
        run_id=RUN_ID, suite="a-suite-with-a-rather-long-name", suite_hash="0" * 64,
        models=[ModelSpec(name=MODEL), ModelSpec(name="openai/small")], tasks=[],
        episodes_planned=0, gem_eval_version="0", host="h", started_at=time.time(),
    )  # fmt: skip
    RunDir.create(tmp_path, manifest)
    listed = piped("results", "list", results=tmp_path)
    assert RUN_ID in listed and MODEL in listed and "…" not in listed
    shown = piped("results", "show", RUN_ID, results=tmp_path)
    assert RUN_ID in shown and MODEL in shown
