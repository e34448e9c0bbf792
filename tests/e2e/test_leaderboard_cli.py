"""``gem-eval leaderboard`` over several runs, end to end: a row never spans two runs or two
scorers, and the default board shows each model's latest finished run with the tasks'
own scorers."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_gate_cli import write_run
from tests.e2e.test_run_cli import gem_eval, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply

MODEL = "openai/m"


def board(*args: str, results: Path) -> list[dict[str, Any]]:
    done = gem_eval("leaderboard", *args, "-f", "json", results=results)
    assert done.returncode == 0, done.stdout + done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def test_a_run_and_its_rerun_never_count_a_sample_twice(tmp_path: Path) -> None:
    """The same model on the same 27 samples, twice: 27 samples a row, not 54."""
    results = tmp_path / "results"
    write_run(results, "first", [i < 18 for i in range(27)], models=(MODEL,))
    write_run(results, "again", [i < 9 for i in range(27)], models=(MODEL,), started_at=2000.0)

    [latest] = board(results=results)  # default: the latest finished run
    assert (latest["run_id"], latest["samples"], latest["scorer"]) == ("again", 27, "success")
    assert latest["se"] == pytest.approx(math.sqrt((1 / 3) * (2 / 3) / 26))

    every = board("--all-runs", results=results)
    assert [(r["run_id"], r["samples"], r["n"]) for r in every] == [
        ("first", 27, 27),
        ("again", 27, 27),
    ]
    assert board("first", "again", results=results) == every

    table = gem_eval("leaderboard", "--all-runs", results=results)
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith("suite fixed, every run (2), by model")
    header = next(line for line in table.stdout.splitlines() if line.split()[:1] == ["model"])
    assert [cell.strip() for cell in header.split("┃")][:4] == ["model", "run", "scorer", "n"]
    default = gem_eval("leaderboard", results=results)
    assert "1 other run not shown: --all-runs shows every run" in default.stdout
    both = gem_eval("leaderboard", "first", "--all-runs", results=results)
    assert (both.returncode, both.stderr) == (2, "error: give RUN ids or --all-runs, not both\n")


def test_an_unfinished_run_is_shown_only_without_a_finished_one(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, "done", [True] * 4, models=(MODEL,))
    write_run(results, "cut", [False] * 2, models=(MODEL,), status="interrupted", started_at=2e3)
    write_run(results, "alone", [True] * 2, models=("openai/x",), status="failed")
    done = gem_eval("leaderboard", "-f", "json", results=results)
    assert [(r["model"], r["run_id"]) for r in json.loads(done.stdout)] == [
        (MODEL, "done"),
        ("openai/x", "alone"),
    ]
    note = "note: openai/x has no finished run of fixed: its latest, alone, is failed"
    passed = (
        f"note: {MODEL}'s latest run of the whole suite fixed, cut, is interrupted: its row "
        "is the earlier finished run done's"
    )
    assert done.stderr.splitlines() == [note, passed]


def test_an_exploratory_rescore_is_set_beside_never_averaged(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """A smoke run re-scored by ``return``: named together they are two rows, each naming
    its scorer; the default board still shows the tasks' own scorer; compare refuses."""
    openai_server.handler = lambda body: Reply("\\boxed{7}")  # solves guess seed 0 only
    results = tmp_path / "results"
    args = ["--suite", "smoke", "--model", MODEL, "--model-base-url", openai_server.base_url]
    played = gem_eval("run", *args, "--model-backend", "openai", "-q", results=results)
    assert played.returncode == 0, played.stdout + played.stderr
    [original] = [d.name for d in run_dirs(results)]
    rescored = gem_eval("rescore", original, "--scorer", "return", results=results)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    [again] = [d.name for d in run_dirs(results) if d.name != original]

    rows = board(original, again, results=results)
    assert [(r["run_id"], r["scorer"]) for r in rows if r["run_id"] == original] == [
        (original, "success")
    ]
    assert [r["scorer"] for r in rows if r["run_id"] == again] == ["return"]
    own = next(r for r in rows if r["run_id"] == original)
    assert (own["samples"], own["score"]) == (4, 0.25)

    [default] = board(results=results)
    assert (default["run_id"], default["scorer"], default["score"]) == (original, "success", 0.25)
    [asked] = board("--scorer", "return", results=results)
    assert (asked["run_id"], asked["scorer"]) == (again, "return")
    table = " ".join(gem_eval("leaderboard", results=results).stdout.split())
    latest = "each model's latest finished run of the whole suite"
    assert table.startswith(f"suite smoke, {latest}, run {original}, ")
    assert "the tasks' own scorers, by model" in table
    assert "--scorer return the latest scored so" in table

    compared = gem_eval("compare", original, again, results=results)
    assert compared.returncode == 2, compared.stdout + compared.stderr
    assert "scored differently: base by success, new by return" in compared.stderr


def test_a_run_of_part_of_the_suite_never_stands_for_a_whole_one(tmp_path: Path) -> None:
    """A's Wordle-only run (newer) beside A's and B's runs of the whole suite: the default
    board shows the whole runs; C, with only a part, is shown marked, and a note names it;
    --all-runs marks every part."""
    results = tmp_path / "results"
    wordle = {"tasks": ["t0"]}
    write_run(results, "a-whole", [True] * 20, models=("openai/a",))
    write_run(results, "b-whole", [False] * 20, models=("openai/b",), started_at=1500.0)
    write_run(results, "a-part", [False] * 20, models=("openai/a",), started_at=2000.0,
              tasks=("t0",), options=wordle)  # fmt: skip
    write_run(results, "c-part", [True] * 20, models=("openai/c",), started_at=3000.0,
              tasks=("t0",), options=wordle)  # fmt: skip
    done = gem_eval("leaderboard", "-f", "json", results=results)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [(r["model"], r["run_id"], r["n"], r["variant"]) for r in json.loads(done.stdout)]
    assert rows == [
        ("openai/a", "a-whole", 20, None),
        ("openai/c", "c-part", 5, "--task 't0'"),
        ("openai/b", "b-whole", 20, None),
    ]
    assert done.stderr.splitlines() == [
        "note: openai/c has no finished run of the whole suite fixed as written: its row is "
        "run c-part's, played with --task 't0'"
    ]
    table = gem_eval("leaderboard", "--all-runs", results=results)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    header = next(line for line in lines if line.split()[:1] == ["model"])
    assert [cell.strip() for cell in header.split("┃")][:4] == ["model", "run", "variant", "scorer"]
    a_part = next(line for line in lines if "a-part" in line)
    assert [cell.strip() for cell in a_part.split("│")][:3] == ["openai/a", "a-part", "--task 't0'"]


def test_titles_and_notes_count_the_runs_named(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, "own", [True] * 4, models=(MODEL,))
    write_run(results, "ret", [True] * 4, models=(MODEL,), scorer="return", started_at=2000.0)
    done = gem_eval("leaderboard", "own", "ret", "--scorer", "success", results=results)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("suite fixed, 2 runs named, run own, scored by success")
    assert done.stdout.splitlines()[-1] == "run ret holds no scores by success: not shown"
    default = gem_eval("leaderboard", "--all-runs", "--scorer", "success", results=results)
    assert default.stdout.splitlines()[-1] == "1 other run holds no scores by success"


def test_rescoring_an_older_run_leaves_the_newer_run_on_the_board(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Two runs of smoke, then a re-scoring of the first with the tasks' own scorers: the
    second run stays on the board (the re-scored episodes were played before it); a
    re-scoring of the second replaces it."""
    openai_server.handler = lambda body: Reply("\\boxed{7}")
    results = tmp_path / "results"
    args = ["--suite", "smoke", "--model", MODEL, "--model-base-url", openai_server.base_url]

    def made(*command: str) -> str:
        """The run a command makes."""
        before = {d.name for d in run_dirs(results)} if results.exists() else set()
        done = gem_eval(*command, results=results)
        assert done.returncode == 0, done.stdout + done.stderr
        [new] = {d.name for d in run_dirs(results)} - before
        return new

    first = made("run", *args, "--model-backend", "openai", "-q")
    second = made("run", *args, "--model-backend", "openai", "-q")
    made("rescore", first)
    [default] = board(results=results)
    assert default["run_id"] == second
    latest = made("rescore", second)
    [default] = board(results=results)
    assert default["run_id"] == latest
