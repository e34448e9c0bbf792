"""``gem_eval.evaluate``: a run from Python, played and stored exactly as ``gem-eval run``
does, its scores as DataFrames."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import gem_eval
from gem_eval.errors import UserError
from tests.cli.invoke import gem_eval as cli


def test_a_run_from_python_is_the_cli_s_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    result = gem_eval.evaluate("smoke", models=["oracle", "noop"], results_dir=results)
    assert (result.status, result.exit_code) == ("finished", 0)
    assert result.run_dir == results / result.run_id and result.run_dir.is_dir()
    board = result.leaderboard.set_index("model")
    assert board.loc["oracle", "score"] == 1.0 and board.loc["noop", "score"] == 0.0
    assert board["n"].to_dict() == {"oracle": 4, "noop": 4}
    assert len(result.episodes) == 8 and set(result.episodes["outcome"]) == {"completed"}
    by_task = result.by(("model", "task_id"))
    assert len(by_task) == 2 * result.episodes["task_id"].nunique()
    # The CLI reads the same run: the same scores on its leaderboard.
    shown = cli("leaderboard", result.run_id, "--format", "json", "--results-dir", str(results))
    assert shown.code == 0, shown
    rows = {row["model"]: row["score"] for row in json.loads(shown.stdout)}
    assert rows == {"oracle": 1.0, "noop": 0.0}
    # A resume of the finished run has nothing to play and changes nothing.
    again = gem_eval.evaluate(resume=result.run_id, results_dir=results)
    assert (again.run_id, again.status, again.summary.outcomes.total()) == (
        result.run_id,
        "finished",
        0,
    )


def test_options_and_models_with_their_own_settings(tmp_path: Path) -> None:
    from gem_eval.records import ModelSpec

    result = gem_eval.evaluate(
        "smoke",
        models=[ModelSpec(name="oracle", max_retries=1)],
        results_dir=tmp_path / "r",
        tasks=["game:Guess*"],
        epochs=2,
        seed=7,
    )
    assert result.status == "finished"
    assert set(result.episodes["epoch"]) == {0, 1}
    assert set(result.episodes["task_id"]) == {"game:GuessTheNumber-v0-easy"}
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["models"][0]["max_retries"] == 1
    assert manifest["extra"]["options"]["seed"] == 7


def test_a_bad_request_is_a_user_error_and_writes_nothing(tmp_path: Path) -> None:
    results = tmp_path / "r"
    with pytest.raises(UserError, match="unknown suite"):
        gem_eval.evaluate("no-such-suite", models=["oracle"], results_dir=results)
    with pytest.raises(UserError, match="served by a server of your own"):
        gem_eval.evaluate("smoke", models=["hosted_vllm/x"], results_dir=results)
    with pytest.raises(UserError, match="temperature"):
        gem_eval.evaluate(
            "smoke", models=["oracle"], model_args={"temperature": "hot"}, results_dir=results
        )
    with pytest.raises(UserError, match="evaluate\\(\\) got no option 'epoch'"):
        gem_eval.evaluate("smoke", models=["oracle"], epoch=2, results_dir=results)  # type: ignore[call-arg]
    assert not results.exists()


def test_aevaluate_runs_on_the_caller_s_loop(tmp_path: Path) -> None:
    async def main() -> gem_eval.EvalResult:
        return await gem_eval.aevaluate("smoke", ["oracle"], results_dir=tmp_path / "r", limit=1)

    result = asyncio.run(main())
    assert result.status == "finished" and len(result.episodes) == 2  # two tasks, one sample
