"""``gem-eval run`` on a disk that fills up: one line, exit 1, the results intact, and
``--resume`` finishes the run once there is room again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gem_eval.store import RunDir
from tests.e2e.test_run_cli import ROOT, gem_eval, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply


def test_a_full_disk_stops_the_run_in_one_line_and_resume_finishes_it(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    # GuessTheNumber-easy seeds 0 and 1 hide 7 and 2: guessing 7, then 2, solves both.
    openai_server.handler = lambda body: Reply(
        "\\boxed{7}" if len(body["messages"]) < 3 else "\\boxed{2}"
    )
    args = ["run", "--suite", "smoke", "--model", "openai/fake", "-q", "--concurrency", "1"]
    args += ["--model-base-url", openai_server.base_url]
    # The first record is written whole; half of the second fits, then the disk is full.
    full = subprocess.run(
        [sys.executable, "-m", "tests.fixtures.full_disk", "episodes.jsonl", "1", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "GEM_EVAL_RESULTS": str(tmp_path)},
    )
    [run] = run_dirs(tmp_path)
    assert full.returncode == 1, full.stdout + full.stderr
    error = f"error: cannot write {run / 'episodes.jsonl'}: No space left on device"
    assert [line for line in full.stderr.splitlines() if "error" in line.lower()] == [error]
    assert full.stderr.splitlines()[-1] == error and "Traceback" not in full.stderr

    raw = (run / "episodes.jsonl").read_bytes()
    assert raw.endswith(b"\n") and len(raw.splitlines()) == 1  # no torn second line
    [first] = RunDir(run).records()
    assert first.outcome == "completed"
    assert json.loads((run / "manifest.json").read_text())["status"] == "failed"

    resumed = gem_eval("run", "--resume", run.name, results=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    records = list(RunDir(run).records())
    assert records[0] == first  # what was written before the disk filled is untouched
    assert len(records) == len({r.key for r in records}) == 4  # played once each
    assert all(r.outcome == "completed" for r in records)
    assert json.loads((run / "manifest.json").read_text())["status"] == "finished"
