"""Two ``gem-eval run`` processes at once on one empty cache (``GEM_EVAL_CACHE``), on MCP
tasks whose services need a prepared build context: both prepare the same contexts and
build the same images at the same time, and every episode must still be scored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_run_cli import ROOT, records, run_dirs

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS = ROOT / "tests" / "fixtures" / "mcp"  # one filesystem and one postgres task


def test_two_runs_on_one_empty_cache_both_score_every_episode(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        "GEM_EVAL_CACHE": str(cache),
        "MCPMARK_TASKS": str(TASKS),
        "COLUMNS": "200",
    }
    args = ["run", "--suite", "mcpmark", "--model", "oracle", "-q"]
    runs = []
    for name in ("first", "second"):
        results = tmp_path / name
        proc = subprocess.Popen(
            [sys.executable, "-m", "gem_eval", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**env, "GEM_EVAL_RESULTS": str(results)},
        )
        runs.append((proc, results))
    try:
        outputs = [proc.communicate(timeout=1200) for proc, _ in runs]
    finally:
        for proc, _ in runs:
            proc.kill()

    for (proc, results), (out, err) in zip(runs, outputs, strict=True):
        assert proc.returncode == 0, out[-3000:] + err[-3000:]
        [run_dir] = run_dirs(results)
        recs = records(run_dir)
        assert sorted(str(r["task_id"]) for r in recs) == [
            "mcp/filesystem/notes/tally",
            "mcp/postgres/shop/restock",
        ]
        assert {(r["outcome"], r["score"]) for r in recs} == {("completed", 1.0)}, [
            (r["task_id"], r["outcome"], r.get("error")) for r in recs
        ]
        assert json.loads((run_dir / "manifest.json").read_text())["status"] == "finished"

    # One context per service, each whole; nothing half-built left beside them.
    services = cache / "services"
    kept = sorted(p.name for p in services.iterdir() if not p.name.endswith(".lock"))
    assert [name.split("-")[0] for name in kept] == ["filesystem", "postgres"], kept
    for name in kept:
        assert (services / name / "Dockerfile").is_file()
        assert (services / name / ".gem-eval-manifest.json").is_file()
