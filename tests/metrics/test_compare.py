from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from gem_eval.cli import report
from gem_eval.metrics.compare import compare_runs, gate
from tests.metrics.test_summary import episode, frame


def run(
    successes: list[bool] | np.ndarray,
    run_id: str = "run",
    model: str = "m",
    infra: int = 0,
    tasks: int = 4,
) -> pd.DataFrame:
    """One run: sample i of task i % tasks succeeds when successes[i]; then `infra` lost ones."""
    rows = [
        episode(model=model, task_id=f"t{i % tasks}", sample=i, success=bool(ok), run_id=run_id)
        for i, ok in enumerate(successes)
    ]
    n = len(rows)
    rows += [
        episode(model=model, task_id="t0", sample=n + i, outcome="infra_error", run_id=run_id)
        for i in range(infra)
    ]
    return frame(rows)


def bernoulli(p: float, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n) < p


def test_compare_pairs_samples_and_breaks_down_by_task() -> None:
    base = run([True] * 8, run_id="a", model="ckpt-1")
    new = run([True] * 6 + [False] * 2, run_id="b", model="ckpt-2", infra=1)
    cmp = compare_runs(base, new)
    assert cmp.paired_on == ("task_id", "sample", "epoch")  # one model each: model ignored
    assert (cmp.n_pairs, cmp.base_mean, cmp.new_mean) == (8, 1.0, 0.75)
    assert cmp.diff == pytest.approx(-0.25)
    assert cmp.ci_low <= cmp.diff <= cmp.ci_high
    assert cmp.binary and cmp.mcnemar is not None
    assert (cmp.mcnemar.only_a, cmp.mcnemar.only_b) == (2, 0)
    assert [(t.task_id, t.n_pairs, t.diff) for t in cmp.per_task] == [
        ("t0", 2, 0.0), ("t1", 2, 0.0), ("t2", 2, -0.5), ("t3", 2, -0.5),
    ]  # fmt: skip
    assert (cmp.new.episodes, cmp.new.scored, cmp.new.unscored) == (9, 8, 1)


def test_compare_pairs_on_model_when_a_run_has_several() -> None:
    base = pd.concat([run([True] * 4, model="x"), run([False] * 4, model="y")])
    new = pd.concat([run([True] * 4, model="x"), run([True] * 4, model="z")])
    cmp = compare_runs(base, new)
    assert cmp.paired_on == ("model", "task_id", "sample", "epoch")
    assert cmp.n_pairs == 4 and cmp.diff == 0.0


def epochs_run(per_sample: list[list[bool]], model: str) -> pd.DataFrame:
    """One run: sample i played its epochs with the outcomes per_sample[i]."""
    rows = [
        episode(model=model, task_id=f"t{i % 2}", sample=i, epoch=e, success=ok, run_id=model)
        for i, outcomes in enumerate(per_sample)
        for e, ok in enumerate(outcomes)
    ]
    return frame(rows)


def test_mcnemar_counts_samples_not_epochs() -> None:
    # 5 samples x 8 epochs; every epoch of a sample agrees. Counted per epoch, 40 discordant
    # pairs all one way would be p ~ 1e-12; 5 independent samples give one-sided p = 1/32.
    # 4 samples all lost: one-sided p = 1/16, not significant at 0.05 however many epochs.
    base = epochs_run([[True] * 8] * 5, "ckpt-1")
    new = epochs_run([[False] * 8] * 5, "ckpt-2")
    cmp = compare_runs(base, new)
    assert (cmp.n_pairs, cmp.n_samples, cmp.binary) == (40, 5, True)
    assert cmp.mcnemar is not None and (cmp.mcnemar.only_a, cmp.mcnemar.only_b) == (5, 0)
    assert cmp.mcnemar.p_value == pytest.approx(2 / 32)
    four_lost = gate(epochs_run([[True] * 8] * 4, "a"), epochs_run([[False] * 8] * 4, "b"))
    assert four_lost.comparison is not None and four_lost.comparison.ci_high == -1.0
    assert four_lost.status == "pass"  # the bootstrap alone would fail it: McNemar guards
    assert "McNemar one-sided p=0.0625 (4 samples pass only in base" in four_lost.reasons[0]
    assert gate(base, new).status == "fail"  # 5 samples: p = 1/32 < 0.05


def test_epochs_that_disagree_leave_the_bootstrap_alone() -> None:
    # A sample whose epochs disagree has a fractional mean: not a success or a failure.
    base = epochs_run([[True, True], [True, False], [False, False]] * 10, "ckpt-1")
    new = epochs_run([[True, False], [False, False], [False, False]] * 10, "ckpt-2")
    cmp = compare_runs(base, new)
    assert (cmp.n_samples, cmp.binary, cmp.mcnemar) == (30, False, None)
    assert cmp.diff == pytest.approx(-1 / 3)
    verdict = gate(base, new)
    assert verdict.status == "fail" and "McNemar" not in verdict.reasons[0]


def test_compare_continuous_scores_have_no_mcnemar() -> None:
    base = run([True] * 4)
    new = run([True] * 4).assign(score=[0.5, 1.0, 0.25, 1.0])
    cmp = compare_runs(base, new)
    assert not cmp.binary and cmp.mcnemar is None
    assert cmp.diff == pytest.approx(-0.3125)


def test_a_clear_regression_fails_the_gate() -> None:
    base = run(bernoulli(0.8, 200, seed=1), model="ckpt-1")
    new = run(bernoulli(0.4, 200, seed=2), model="ckpt-2")
    verdict = gate(base, new)
    assert (verdict.status, verdict.exit_code) == ("fail", 1)
    assert "significant drop beyond 0.02" in verdict.reasons[0]
    assert verdict.comparison is not None and verdict.comparison.ci_high < -0.02


def test_equal_runs_pass_the_gate() -> None:
    outcomes = bernoulli(0.6, 100, seed=3)
    verdict = gate(run(outcomes), run(outcomes))
    assert (verdict.status, verdict.exit_code) == ("pass", 0)
    assert "no significant drop" in verdict.reasons[0]


def test_a_small_insignificant_drop_passes_the_gate() -> None:
    base = bernoulli(0.8, 100, seed=4)
    new = base.copy()
    new[np.flatnonzero(base)[:3]] = False  # 3 of 100 samples regress: a 0.03 drop
    verdict = gate(run(base), run(new), max_drop=0.02)
    assert verdict.comparison is not None and verdict.comparison.diff == pytest.approx(-0.03)
    assert (verdict.status, verdict.exit_code) == ("pass", 0)


def test_a_tiny_sample_cannot_fail_the_gate() -> None:
    # The bootstrap interval of 3 pairs all lost is [-1, -1]; McNemar's exact test (p=.125)
    # does not support a regression.
    verdict = gate(run([True] * 3), run([False] * 3))
    assert verdict.status == "pass"


def test_different_suite_hashes_are_incomparable() -> None:
    outcomes = bernoulli(0.6, 50, seed=5)
    verdict = gate(run(outcomes), run(outcomes), same_suite_hash=False)
    assert (verdict.status, verdict.exit_code) == ("incomparable", 3)
    assert "suite hashes differ" in verdict.reasons[0]


def test_a_high_infra_error_rate_is_incomparable() -> None:
    outcomes = bernoulli(0.6, 80, seed=6)
    verdict = gate(run(outcomes), run(outcomes, infra=20))  # 20% of the new run lost
    assert (verdict.status, verdict.exit_code) == ("incomparable", 3)
    assert "20 of 100 episodes of the new run were not scored" in verdict.reasons[0]
    assert gate(run(outcomes), run(outcomes, infra=5)).status == "pass"  # ~6%: tolerated


def test_runs_without_common_samples_are_incomparable() -> None:
    base = run([True] * 4)
    new = run([True] * 4).assign(task_id="other")
    verdict = gate(base, new)
    assert (verdict.status, verdict.exit_code) == ("incomparable", 3)
    assert "no episode was scored in both runs" in verdict.reasons[0]


class FakeIndex:
    """Stands in for gem_eval.store.Index: two runs of the same suite, and one of another."""

    frames: ClassVar[dict[str, pd.DataFrame]] = {}

    def __init__(self, path: Path) -> None:
        self.path = path

    def runs(self) -> list[dict[str, Any]]:
        hashes = {"base": "h1", "good": "h1", "bad": "h1", "other": "h2"}
        return [
            {
                "run_id": r,
                "suite": "fixed",
                "models": sorted(set(frame["model"])),
                "suite_hash": hashes[r],
                "started_at": float(i),
                "status": "finished",
                "episodes_planned": len(frame),
                "episodes_done": len(frame),
            }
            for i, (r, frame) in enumerate(self.frames.items())
        ]

    def episodes_frame(
        self, run_ids: list[str] | None = None, suite: str | None = None
    ) -> pd.DataFrame:
        ids = run_ids if run_ids is not None else list(self.frames)
        return pd.concat([self.frames[r] for r in ids], ignore_index=True)

    def rebuild(self, root: Path) -> None:
        pass

    def close(self) -> None:
        pass


def test_cli_commands_over_a_fake_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    outcomes = bernoulli(0.8, 200, seed=7)
    FakeIndex.frames = {
        "base": run(outcomes, run_id="base", model="ckpt-1"),
        "good": run(outcomes, run_id="good", model="ckpt-2"),
        "bad": run(bernoulli(0.3, 200, seed=8), run_id="bad", model="ckpt-3"),
        "other": run(outcomes, run_id="other", model="ckpt-4"),
    }
    # The fake stands in for the index class that open_results_index opens (with the real
    # store's code around it, as the commands meet it).
    monkeypatch.setattr("gem_eval.store.index.Index", FakeIndex)
    app = typer.Typer()
    app.command()(report.leaderboard)
    app.command()(report.compare)
    app.command()(report.gate)
    cli = CliRunner()
    common = ["--results-dir", str(tmp_path)]

    def invoke(*args: str) -> Any:
        return cli.invoke(app, [*args, *common], env={"COLUMNS": "200"})

    result = invoke("gate", "bad", "--baseline", "base")
    assert result.exit_code == 1, result.output
    assert result.output.startswith("gate FAIL: bad against baseline base")
    assert invoke("gate", "good", "--baseline", "base").exit_code == 0
    result = invoke("gate", "other", "--baseline", "base")
    assert result.exit_code == 3 and "suite hash: baseline h1, new h2" in result.output
    assert invoke("gate", "latest", "--baseline", "base").exit_code == 3  # "other" is latest

    result = invoke("leaderboard", "base", "bad", "--format", "md")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[2].startswith("| ckpt-1 | base | 200 |")
    result = invoke("leaderboard", "--by", "task")
    assert result.exit_code == 0 and "ckpt-4" in result.output and "t3" in result.output
    result = invoke("leaderboard", "-o", str(tmp_path / "board.json"))
    assert result.exit_code == 0 and (tmp_path / "board.json").exists()

    result = invoke("compare", "base", "bad")
    assert result.exit_code == 0, result.output
    assert "McNemar" in result.output and "all" in result.output
    result = invoke("compare", "base", "bda")
    assert result.exit_code != 0 and "Did you mean: bad" in str(result.exception)


def test_a_model_of_one_run_only_is_named_not_dropped() -> None:
    base = pd.concat([run([True] * 4, model="x"), run([True] * 4, model="y")])
    new = pd.concat([run([True] * 4, model="x"), run([True] * 4, model="z")])
    cmp = compare_runs(base, new)
    assert (cmp.only_base, cmp.only_new) == (("y",), ("z",))
    assert cmp.unpaired_models() == [
        "model y is in the base run only: not compared",
        "model z is in the new run only: not compared",
    ]
    verdict = gate(base, new)  # the new run lacks model y: not like with like
    assert (verdict.status, verdict.exit_code) == ("incomparable", 3)
    assert verdict.reasons[0].startswith("the new run lacks 1 model that the baseline played")
    assert "model y is in the base run only: not compared" in verdict.reasons
    subset = gate(base, new, allow_subset=True)
    assert subset.status == "pass" and subset.reasons[1:] == cmp.unpaired_models()
    assert gate(new, base).status == "incomparable"  # base z is missing from the new run
    one_each = compare_runs(run([True] * 4, model="ckpt-1"), run([True] * 4, model="ckpt-2"))
    assert one_each.unpaired_models() == []  # a checkpoint against its baseline


def test_runs_scored_differently_do_not_compare() -> None:
    base = run([True] * 4).assign(scorer="success")
    new = run([True] * 4).assign(scorer="return", score=-0.28)
    with pytest.raises(ValueError, match="scored differently: base by success, new by return"):
        compare_runs(base, new)
    verdict = gate(base, new)
    assert (verdict.status, verdict.exit_code, verdict.comparison) == ("incomparable", 3, None)
    assert verdict.reasons == ["the runs are scored differently: base by success, new by return"]
    assert gate(base, base.copy()).status == "pass"  # the same scorer compares


@pytest.mark.parametrize("max_drop", [-0.1, 1.5])
def test_max_drop_outside_0_1_is_refused(max_drop: float) -> None:
    with pytest.raises(ValueError, match=r"max_drop must lie in \[0, 1\]"):
        gate(run([True] * 4), run([True] * 4), max_drop=max_drop)


def test_a_task_or_samples_of_one_run_only_are_named() -> None:
    """A run of tasks t0 and t1 against a run of t0..t3: t2 and t3 are named with their
    sample counts; samples of a shared task that one run lacks are counted."""
    whole = run(bernoulli(0.5, 40, seed=5))  # samples 0..39, task i % 4: 10 samples each
    part = whole[whole["task_id"].isin(["t0", "t1"]) & (whole["sample"] < 36)]
    cmp = compare_runs(whole, part)
    assert cmp.n_pairs == 18
    assert cmp.unpaired() == [
        "task t0: 1 sample is in the base run only: not compared",
        "task t1: 1 sample is in the base run only: not compared",
        "task t2 is in the base run only (10 samples): not compared",
        "task t3 is in the base run only (10 samples): not compared",
    ]
    assert cmp.new_lacks_base
    back = compare_runs(part, whole)
    assert back.unpaired()[-1] == "task t3 is in the new run only (10 samples): not compared"
    assert not back.new_lacks_base


def test_the_gate_does_not_judge_a_part_of_the_baselines_tasks_unless_asked() -> None:
    """A Wordle-only run against a whole baseline, which scored 0.1 on the task the new run
    lacks: INCOMPARABLE, naming the task; allowed a subset, a verdict on the shared part
    that still names it."""
    base = run([i % 2 == 0 and i % 10 != 1 for i in range(40)], tasks=2)
    base.loc[base["task_id"] == "t1", ["score", "success"]] = [0.0, False]
    base.loc[base["sample"] == 1, ["score", "success"]] = [1.0, True]
    new = base[base["task_id"] == "t0"].copy()
    verdict = gate(base, new)
    assert (verdict.status, verdict.exit_code) == ("incomparable", 3)
    assert verdict.reasons == [
        "the new run lacks 20 samples of 1 task that the baseline played: a gate compares "
        "like with like",
        "task t1 is in the base run only (20 samples): not compared",
    ]
    subset = gate(base, new, allow_subset=True)
    assert subset.status == "pass" and subset.reasons[0].startswith("no significant drop")
    assert subset.reasons[1:] == ["task t1 is in the base run only (20 samples): not compared"]
    extra = gate(new, base)  # the new run has more: judged on the baseline's tasks
    assert extra.status == "pass"
    assert extra.reasons[1:] == ["task t1 is in the new run only (20 samples): not compared"]


def test_samples_missing_per_model_are_named_with_the_model() -> None:
    base = pd.concat([run([True] * 8, model="x"), run([True] * 8, model="y")])
    new = base[(base["model"] == "x") | (base["task_id"] != "t3")]
    cmp = compare_runs(base, new)
    line = "task t3 of model y is in the base run only (2 samples): not compared"
    assert cmp.unpaired() == [line]
