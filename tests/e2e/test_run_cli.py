"""``gem-eval run`` end to end: the CLI in a subprocess against the fake model server."""

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
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply

ROOT = Path(__file__).resolve().parents[2]


def gem_eval(
    *args: str, results: Path, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GEM_EVAL_RESULTS": str(results), "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "gem_eval", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )


def run_dirs(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if (p / "manifest.json").exists())


def records(run_dir: Path) -> list[dict[str, object]]:
    """The records written so far (a line still being written by a live run is skipped)."""
    from gem_eval.records import EpisodeRecord

    path = run_dir / "episodes.jsonl"
    if not path.exists():  # the run made its directory and has not yet opened the file
        return []
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [  # read as gem-eval reads them: tool outputs are stored once, in the messages
        EpisodeRecord.model_validate_json(line).model_dump()
        for line in complete.splitlines()
        if line.strip()
    ]


def start_games_run(
    server: FakeOpenAIServer, results: Path, limit: int, concurrency: int
) -> subprocess.Popen[str]:
    """``gem-eval run --suite games`` in the background, its output captured."""
    args = ["run", "--suite", "games", "--model", "openai/fake", "--limit", str(limit)]
    args += ["--concurrency", str(concurrency), "--model-base-url", server.base_url, "-q"]
    return start_gem_eval(args, results)


def start_gem_eval(args: list[str], results: Path) -> subprocess.Popen[str]:
    """``gem-eval ARGS`` in the background, its output captured."""
    return subprocess.Popen(
        [sys.executable, "-m", "gem_eval", *args],
        cwd=ROOT,
        env={**os.environ, "GEM_EVAL_RESULTS": str(results)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_from_a_terminal,  # the tests send SIGINT as Ctrl-C
    )


def wait_for_records(results: Path, count: int, timeout: float = 120) -> None:
    """Wait until the run under ``results`` has recorded ``count`` episodes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dirs = run_dirs(results) if results.exists() else []
        if dirs and len(records(dirs[0])) >= count:
            return
        time.sleep(0.05)


def test_smoke_suite_runs_scores_and_records(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    # GuessTheNumber-easy seeds 0 and 1 hide 7 and 2: guessing 7, then 2, solves both
    # (a wrong guess only costs a turn).
    openai_server.handler = lambda body: Reply(
        "\\boxed{7}" if len(body["messages"]) < 3 else "\\boxed{2}"
    )
    result = gem_eval(
        "run",
        "--suite",
        "smoke",
        "--model-base-url",  # before the models: every model's
        openai_server.base_url,
        "--model",
        "openai/fake",
        "--model",
        "openai/fake-too",
        "-q",
        results=tmp_path,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    [run] = run_dirs(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["suite"] == "smoke"
    assert [m["name"] for m in manifest["models"]] == ["openai/fake", "openai/fake-too"]
    rows = records(run)
    assert len(rows) == manifest["episodes_planned"] == 8  # 2 models x 2 tasks x 2 samples
    samples = {(r["model"], r["task_id"], r["sample"], r["seed"]) for r in rows}
    per_model = {
        m: {s[1:] for s in samples if s[0] == m} for m in ("openai/fake", "openai/fake-too")
    }
    assert per_model["openai/fake"] == per_model["openai/fake-too"]  # the same samples
    assert {r["outcome"] for r in rows} == {"completed"}
    guess = [r for r in rows if str(r["task_id"]).startswith("game")]
    assert guess and all(r["success"] for r in guess)
    assert all(r["trajectory"]["messages"] for r in rows)  # full transcripts are kept
    assert (tmp_path / "index.sqlite").exists()
    assert "[gem-eval]" in result.stderr  # plain progress lines when not a TTY


def test_infra_errors_give_their_own_exit_code(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = lambda body: Fault.status(503)
    result = gem_eval(
        "run",
        "--suite",
        "smoke",
        "--model",
        "openai/fake",
        "--limit",
        "1",
        "--max-retries",
        "1",
        "--model-base-url",
        openai_server.base_url,
        "-q",
        results=tmp_path,
        timeout=600,
    )
    assert result.returncode == 3, result.stderr
    [run] = run_dirs(tmp_path)
    assert {r["outcome"] for r in records(run)} == {"infra_error"}
    assert all(r["score"] is None for r in records(run))


def test_sigkill_mid_run_then_resume_loses_and_repeats_nothing(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """While the run plays, a second process may not play it too; once killed, its
    run says so, and ``--resume`` finishes it."""
    openai_server.latency = 0.05
    proc = start_games_run(openai_server, tmp_path, limit=3, concurrency=2)
    wait_for_records(tmp_path, 2)
    twice = gem_eval("run", "--resume", "latest", "-q", results=tmp_path)
    assert twice.returncode == 2, twice.stderr + twice.stdout
    assert "is being played by another process" in twice.stderr
    shown = gem_eval("results", "show", "latest", results=tmp_path)
    assert "running" in shown.stdout and "stopped" not in shown.stdout, shown.stdout
    wait_for_records(tmp_path, 6)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    [run] = run_dirs(tmp_path)
    before = records(run)
    planned = json.loads((run / "manifest.json").read_text())["episodes_planned"]
    assert 6 <= len(before) < planned, "kill the run mid-way"
    for command in (["show", "latest"], ["list"]):
        shown = gem_eval("results", *command, results=tmp_path)
        assert "stopped (its process is gone: --resume it)" in " ".join(shown.stdout.split())

    result = gem_eval("run", "--resume", "latest", "-q", results=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    after = records(run)
    keys = [r["key"] for r in after]
    assert len(keys) == len(set(keys)) == planned  # none lost, none counted twice
    assert after[: len(before)] == before  # what finished before the kill is kept as it was
    assert f"({len(before)} done)" in result.stdout.replace("\n", " ")
    assert json.loads((run / "manifest.json").read_text())["status"] == "finished"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("name: x\ntasks:\n  - env: game:Wordel-v0-easy\n", "game:Wordle-v0-easy"),
        ("name: x\ntasks: [\n", "x.yaml:"),
    ],
)
def test_bad_suite_is_one_line_with_file_and_line(
    tmp_path: Path, content: str, message: str
) -> None:
    suite = tmp_path / "x.yaml"
    suite.write_text(content)
    result = gem_eval("run", "--suite", str(suite), "--model", "openai/fake", results=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


FIXED = """\
name: fixed
description: GuessTheNumber with one possible secret, 3, that a model knows or not.
defaults: {samples: 12, limits: {max_turns: 2}}
tasks:
  - env: game:GuessTheNumber-v0
    id: three
    args: {min_number: 3, max_number: 3, max_turns: 2}
"""


def test_leaderboard_compare_and_gate(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = tmp_path / "fixed.yaml"
    suite.write_text(FIXED)
    results = tmp_path / "results"

    def run(model: str, answer: str) -> str:
        openai_server.handler = lambda body: Reply(answer)
        result = gem_eval(
            "run",
            "--suite",
            str(suite),
            "--model",
            model,
            "--model-base-url",
            openai_server.base_url,
            "-q",
            results=results,
        )
        assert result.returncode == 0, result.stderr
        return _newest(results)

    base = run("openai/good", "\\boxed{3}")
    again = run("openai/good-too", "\\boxed{3}")
    worse = run("openai/bad", "\\boxed{4}")

    board = gem_eval("leaderboard", "--format", "csv", results=results)
    assert board.returncode == 0, board.stderr
    lines = board.stdout.strip().splitlines()
    header = lines[0].split(",")
    by_model = {row.split(",")[header.index("model")]: row.split(",") for row in lines[1:]}
    assert set(by_model) == {"openai/good", "openai/good-too", "openai/bad"}
    score = header.index("score")
    assert float(by_model["openai/good"][score]) == 1.0
    assert float(by_model["openai/bad"][score]) == 0.0

    compared = gem_eval("compare", base, worse, results=results)
    assert compared.returncode == 0, compared.stderr
    text = " ".join(compared.stdout.split())
    assert "diff -1.000 over 12 pairs" in text and "12 only in new" not in text

    # An interrupted run is not comparable: the gate says so and exits 3.
    manifest_path = results / worse / "manifest.json"
    finished = manifest_path.read_text()
    manifest_path.write_text(json.dumps({**json.loads(finished), "status": "interrupted"}))
    assert gem_eval("results", "reindex", results=results).returncode == 0
    partial = gem_eval("gate", worse, "--baseline", base, results=results)
    assert partial.returncode == 3 and "is interrupted" in partial.stdout, partial.stdout
    manifest_path.write_text(finished)
    assert gem_eval("results", "reindex", results=results).returncode == 0

    passing = gem_eval("gate", again, "--baseline", base, results=results)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    failing = gem_eval("gate", worse, "--baseline", base, results=results)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "FAIL" in failing.stdout


def _newest(results: Path) -> str:
    manifests = [json.loads((d / "manifest.json").read_text()) for d in run_dirs(results)]
    return max(manifests, key=lambda m: m["started_at"])["run_id"]


def test_ctrl_c_records_cancelled_episodes_and_resume_finishes(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.latency = 0.2
    proc = start_games_run(openai_server, tmp_path, limit=2, concurrency=4)
    wait_for_records(tmp_path, 2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    [run] = run_dirs(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    outcomes = [r["outcome"] for r in records(run)]
    assert "cancelled" in outcomes  # the episodes in flight
    assert "resume with gem-eval run --resume" in out

    openai_server.latency = 0.0
    result = gem_eval("run", "--resume", run.name, "-q", results=tmp_path)
    assert result.returncode == 0, result.stderr
    latest: dict[str, str] = {}
    for r in records(run):
        latest[str(r["key"])] = str(r["outcome"])
    assert len(latest) == manifest["episodes_planned"]
    assert "cancelled" not in latest.values()
