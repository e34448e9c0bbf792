"""``gem-eval run ... 2>&1 | head``: a reader that leaves early neither fails nor hangs
the run. The lines stop, the run plays every episode, records and scores it, and exits
with its usual code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_run_cli import ROOT, records, run_dirs
from tests.fixtures.openai_server import serve

EPISODES = 30  # more than PlainProgress's 25: a progress line falls mid-run


def start_run(
    url: str, results: Path, quiet: bool, stdout: int, stderr: int
) -> subprocess.Popen[bytes]:
    args = ["run", "--suite", "math", "--task", "math", "--limit", str(EPISODES)]
    args += ["--model", "openai/fake", "--model-base-url", url, "--concurrency", "4"]
    return subprocess.Popen(
        [sys.executable, "-m", "gem_eval", *args, *(["-q"] if quiet else [])],
        cwd=ROOT,
        env={**os.environ, "GEM_EVAL_RESULTS": str(results)},
        stdout=stdout,
        stderr=stderr,
    )


def read_then_leave(read_end: int) -> bytes:
    """Read what ``head -1`` would (up to the first newline), then close the pipe."""
    seen = b""
    while b"\n" not in seen:
        chunk = os.read(read_end, 64)
        if not chunk:
            break
        seen += chunk
    os.close(read_end)
    return seen


def assert_played_whole(results: Path) -> None:
    [run_dir] = run_dirs(results)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["error"] is None, manifest
    played = records(run_dir)
    assert len({r["key"] for r in played}) == len(played) == EPISODES
    assert all(r["outcome"] == "completed" for r in played)  # answered and graded


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "default"])
def test_a_reader_that_leaves_does_not_fail_or_hang_the_run(quiet: bool, tmp_path: Path) -> None:
    """stdout and stderr on one pipe (``2>&1 | head -1``), closed after the first line:
    the progress lines and the summary after it go nowhere; exit 0 as if nobody left."""
    with serve(latency=0.3) as server:
        server.handler = lambda _body: _boxed_seven()
        read_end, write_end = os.pipe()
        proc = start_run(server.base_url, tmp_path, quiet, write_end, write_end)
        os.close(write_end)
        first = read_then_leave(read_end)
        try:
            code = proc.wait(timeout=240)  # a hang fails here, not the whole suite
        finally:
            proc.kill()
    assert first.startswith(b"run "), first
    assert code == 0
    assert_played_whole(tmp_path)


def test_only_the_closed_stream_goes_quiet(tmp_path: Path) -> None:
    """stderr's reader leaves, stdout goes to a file: the summary still reaches it."""
    out = tmp_path / "stdout.txt"
    results = tmp_path / "results"
    with serve(latency=0.3) as server, out.open("wb") as sink:
        server.handler = lambda _body: _boxed_seven()
        read_end, write_end = os.pipe()
        os.close(read_end)  # nobody will ever read stderr
        proc = start_run(server.base_url, results, True, sink.fileno(), write_end)
        os.close(write_end)
        try:
            code = proc.wait(timeout=240)
        finally:
            proc.kill()
    assert code == 0
    assert_played_whole(results)
    text = out.read_text()
    assert text.startswith("run ") and f"this session: {EPISODES} scored" in text, text


def _boxed_seven() -> object:
    from tests.fixtures.openai_server import Reply

    return Reply("\\boxed{7}")


def test_a_closed_stdout_does_not_cost_the_exit_code(tmp_path: Path) -> None:
    """``gem-eval run ... | head -1`` with stderr on a file: the summary that rich prints
    to the closed stdout at the end goes nowhere (rich alone would exit 1); the progress
    lines still reach stderr."""
    err = tmp_path / "stderr.txt"
    results = tmp_path / "results"
    with serve(latency=0.3) as server, err.open("wb") as sink:
        server.handler = lambda _body: _boxed_seven()
        read_end, write_end = os.pipe()
        proc = start_run(server.base_url, results, True, write_end, sink.fileno())
        os.close(write_end)
        first = read_then_leave(read_end)
        try:
            code = proc.wait(timeout=240)
        finally:
            proc.kill()
    assert first.startswith(b"run "), first
    assert code == 0, err.read_text()
    assert_played_whole(results)
    assert f"[gem-eval] {EPISODES}/{EPISODES} done" in err.read_text()
