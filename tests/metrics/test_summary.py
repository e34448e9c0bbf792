from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gem_eval.metrics import summarize
from gem_eval.metrics.render import summary_table, to_text, write_table
from gem_eval.records import EPISODE_COLUMNS

SCORED = ("completed", "truncated", "model_error")


def episode(
    model: str = "m",
    task_id: str = "t",
    sample: int = 0,
    epoch: int = 0,
    outcome: str = "completed",
    success: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """One row of an episode frame; ``extra`` overrides any column."""
    scored = outcome in SCORED
    row: dict[str, Any] = {
        "run_id": "run-1", "key": f"{model}|{task_id}|{sample}|{epoch}", "model": model,
        "task_id": task_id, "category": None, "sample": sample, "epoch": epoch,
        "outcome": outcome, "score": float(success) if scored else None,
        "success": success and scored, "turns": 4, "input_tokens": 100, "output_tokens": 10,
        "cost_usd": 0.01, "latency_s": 1.0, "retries": 0,
    }  # fmt: skip
    row.update(extra)
    return row


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    out: pd.DataFrame = pd.DataFrame(rows, columns=EPISODE_COLUMNS)
    return out


def row_of(board: pd.DataFrame, **where: Any) -> Any:
    """The one row of ``board`` whose columns equal ``where``."""
    mask = pd.Series(True, index=board.index)
    for column, value in where.items():
        mask &= board[column] == value
    assert mask.sum() == 1, board
    return board[mask].iloc[0]


def test_infra_errors_are_excluded_from_the_denominator_and_counted() -> None:
    rows = [episode(sample=i, success=i < 6) for i in range(8)]
    rows.append(episode(sample=8, outcome="model_error"))
    rows += [episode(sample=9 + i, outcome="infra_error") for i in range(2)]
    rows.append(episode(sample=11, outcome="env_error", success=True))  # must not count
    rows.append(episode(sample=12, outcome="cancelled"))
    board = summarize(frame(rows))
    r = row_of(board, model="m")
    assert r["n"] == 9  # 8 completed + 1 model_error
    assert r["accuracy"] == pytest.approx(6 / 9)
    assert r["score"] == pytest.approx(6 / 9)
    assert r["se"] == pytest.approx(math.sqrt((6 / 9) * (3 / 9) / 8))
    assert r["ci_low"] < r["score"] < r["ci_high"]
    counts = (r["infra_error"], r["env_error"], r["model_error"], r["cancelled"])
    assert counts == (2, 1, 1, 1)
    assert r["tokens"] == 13 * 110  # every episode was paid for
    assert r["cost_usd"] == pytest.approx(0.13)
    assert r["turns"] == 4.0


def test_a_group_with_only_infra_errors_has_no_score_but_keeps_its_counts() -> None:
    rows = [episode(model="a", success=True), episode(model="b", outcome="infra_error")]
    board = summarize(frame(rows))
    assert list(board["model"]) == ["a", "b"]
    b = row_of(board, model="b")
    assert b["n"] == 0 and math.isnan(b["score"]) and b["infra_error"] == 1


def test_by_model_sorts_best_first() -> None:
    rows = [episode(model="weak", sample=i, success=i < 2) for i in range(10)]
    rows += [episode(model="strong", sample=i, success=i < 9) for i in range(10)]
    board = summarize(frame(rows))
    assert list(board["model"]) == ["strong", "weak"]
    assert list(board["score"]) == pytest.approx([0.9, 0.2])


def test_by_task_and_by_category() -> None:
    rows = [
        episode(model="m", task_id="wordle", category="games", sample=0, success=True),
        episode(model="m", task_id="wordle", category="games", sample=1, success=False),
        episode(model="m", task_id="sudoku", category="games", sample=0, success=True),
        episode(model="m", task_id="gsm8k", category=None, sample=0, success=True),
        episode(model="m", task_id="gsm8k", category=None, sample=1, outcome="infra_error"),
    ]
    by_task = summarize(frame(rows), by=("model", "task_id"))
    assert list(by_task["task_id"]) == ["gsm8k", "sudoku", "wordle"]
    assert row_of(by_task, task_id="wordle")["score"] == 0.5
    assert row_of(by_task, task_id="gsm8k")[["n", "infra_error"]].tolist() == [1, 1]
    by_category = summarize(frame(rows), by=("model", "category"))
    assert list(by_category["category"]) == ["(none)", "games"]
    games = row_of(by_category, category="games")
    assert (games["n"], games["score"]) == (3, pytest.approx(2 / 3))


def test_pass_at_k_and_pass_hat_k_from_epochs() -> None:
    # sample 0 solved in 1 of 3 epochs, sample 1 in 3 of 3
    rows = [episode(sample=0, epoch=e, success=e == 0) for e in range(3)]
    rows += [episode(sample=1, epoch=e, success=True) for e in range(3)]
    board = summarize(frame(rows))
    r = row_of(board, model="m")
    assert (r["n"], r["samples"]) == (6, 2)
    assert r["pass@1"] == pytest.approx((1 / 3 + 1) / 2)
    assert r["pass@2"] == pytest.approx((2 / 3 + 1) / 2)
    assert r["pass@3"] == pytest.approx(1.0)
    assert r["pass^2"] == pytest.approx((0 + 1) / 2)
    assert r["pass^3"] == pytest.approx(0.5)
    assert r["score"] == pytest.approx((1 / 3 + 1) / 2)


def test_an_epoch_lost_to_infra_leaves_its_sample_out_of_larger_k() -> None:
    rows = [episode(sample=0, epoch=e, success=True) for e in range(2)]
    rows += [episode(sample=1, epoch=0), episode(sample=1, epoch=1, outcome="infra_error")]
    r = row_of(summarize(frame(rows)), model="m")
    assert r["pass@1"] == pytest.approx(0.5)
    assert r["pass@2"] == pytest.approx(1.0)  # only sample 0 has 2 scored epochs


def test_one_epoch_has_no_pass_at_k_columns_unless_asked() -> None:
    rows = [episode(sample=i, success=i % 2 == 0) for i in range(4)]
    assert not [c for c in summarize(frame(rows)).columns if c.startswith("pass")]
    board = summarize(frame(rows), k_values=(1,))
    assert row_of(board, model="m")["pass@1"] == pytest.approx(0.5)


def test_an_empty_frame_gives_an_empty_board() -> None:
    assert summarize(frame([])).empty


def test_rendering(tmp_path: Path) -> None:
    rows = [episode(sample=i, success=i < 3, cost_usd=None) for i in range(4)]
    board = summarize(frame(rows))
    md = to_text(board, "md")
    assert md.splitlines()[0].startswith("| model | run_id | n |")
    assert "| m | run-1 | 4 | 4 | 0.750 |" in md
    records = json.loads(to_text(board, "json"))
    assert records[0]["score"] == 0.75 and records[0]["cost_usd"] is None
    assert to_text(board, "csv").startswith("model,run_id,n,samples,score")
    assert "<table" in to_text(board, "html")
    path = write_table(board, "csv", tmp_path / "out" / "board.csv")
    assert pd.read_csv(path)["n"].tolist() == [4]
    table = summary_table(board, title="t")
    assert "CI" in [c.header for c in table.columns]
    with pytest.raises(ValueError):
        to_text(board, "xlsx")  # type: ignore[arg-type]


def test_a_run_and_its_rerun_are_two_rows_never_twice_the_samples() -> None:
    """The same 27 samples played in two runs are two measurements of 27 samples, not 54
    samples: each run is its own row, with the SE of 27."""
    first = [episode(sample=i, success=i < 18, run_id="r1") for i in range(27)]
    again = [episode(sample=i, success=i < 9, run_id="r2") for i in range(27)]
    board = summarize(frame(first + again))
    assert list(board["run_id"]) == ["r1", "r2"]  # best first
    for run_id, p in (("r1", 18 / 27), ("r2", 9 / 27)):
        r = row_of(board, model="m", run_id=run_id)
        assert (r["n"], r["samples"]) == (27, 27)
        assert r["score"] == pytest.approx(p)
        assert r["se"] == pytest.approx(math.sqrt(p * (1 - p) / 26))


def test_scores_of_two_scorers_are_never_averaged() -> None:
    """A run graded by ``success`` and its re-scoring by ``return``: one row each, named."""
    success = frame([episode(sample=i, success=True, run_id="orig") for i in range(4)])
    returns = frame([episode(sample=i, run_id="ret", score=-1.0) for i in range(4)])
    both = pd.concat([success.assign(scorer="success"), returns.assign(scorer="return")])
    board = summarize(both, by=("model", "task_id"))
    assert list(board.columns[:4]) == ["model", "task_id", "run_id", "scorer"]
    assert [(r.run_id, r.scorer, r.score) for r in board.itertuples()] == [
        ("orig", "success", 1.0),
        ("ret", "return", -1.0),
    ]
    mixed = success.assign(scorer=["success", "return"] * 2)  # one run, two scorers
    assert sorted(summarize(mixed)["scorer"]) == ["return", "success"]


def test_rows_of_several_suites_sort_by_suite_first() -> None:
    rows = [episode(model="a", run_id="s1", success=False), episode(model="b", run_id="g1")]
    board = summarize(frame(rows).assign(suite=["smoke", "games"]))
    assert list(board[["suite", "model"]].itertuples(index=False, name=None)) == [
        ("games", "b"),
        ("smoke", "a"),
    ]
    table = summary_table(board)
    assert [c.header for c in table.columns][:3] == ["model", "suite", "run"]
    lone = summary_table(summarize(frame(rows[:1]).assign(suite="smoke", scorer="success")))
    assert [c.header for c in lone.columns][:2] == ["model", "scorer"]  # title names the run
