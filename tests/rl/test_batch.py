"""Which episodes a batch takes, and its one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gem_eval.errors import UserError
from gem_eval.models.base import ModelOutput
from gem_eval.records import EpisodeRecord
from gem_eval.rl import batch as batch_module
from gem_eval.rl.batch import build_batch, write_batch
from gem_eval.trajectory import Step, Trajectory


def _record(key: str, outcome: str, rewards: list[float], sample: int = 0) -> EpisodeRecord:
    traj = Trajectory(env_id="e", model="m", outcome=outcome)  # type: ignore[arg-type]
    messages: list[dict[str, str]] = [{"role": "user", "content": "start"}]
    for i, r in enumerate(rewards):
        traj.steps.append(
            Step(
                index=i, output=ModelOutput(text=f"a{i}"), action=f"a{i}", observation="o", reward=r
            )
        )
        messages += [{"role": "assistant", "content": f"a{i}"}, {"role": "user", "content": "o"}]
    traj.messages = messages
    return EpisodeRecord(
        run_id="r", key=key, model="m", task_id="t", sample=sample, epoch=0, outcome=outcome,
        score=None if outcome == "infra_error" else 0.0, success=False, turns=len(rewards),
        started_at=0.0, finished_at=1.0, trajectory=traj,
    )  # fmt: skip


def test_only_scored_episodes_are_experience() -> None:
    records = [
        _record("a", "completed", [0.0, 1.0]),
        _record("b", "model_error", [0.5], sample=1),
        _record("c", "infra_error", [1.0], sample=2),
        _record("d", "cancelled", [], sample=3),
    ]
    frame, about = build_batch(records, 0.5, "reinforce")
    assert frame["episode"].tolist() == ["a", "a", "b"]
    assert frame["return"].tolist() == [0.5, 1.0, 0.5]  # G_0 = 0 + 0.5 * 1
    assert frame["advantage"].tolist() == frame["return"].tolist()
    assert about["skipped"] == {"infra_error": 1, "cancelled": 1}
    assert frame["truncated"].tolist() == [False, False, False]


def test_a_limit_marks_the_last_turn_truncated() -> None:
    frame, _ = build_batch([_record("a", "truncated", [0.0, 0.0])], 1.0, "rebn")
    assert frame["truncated"].tolist() == [False, True]


def test_nothing_to_learn_from_and_unknown_estimators_are_one_line_errors() -> None:
    with pytest.raises(UserError, match=r"no episode to learn from \(skipped: 1 infra_error\)"):
        build_batch([_record("c", "infra_error", [1.0])], 1.0, "rebn")
    with pytest.raises(UserError, match=r"unknown estimator 'rbn'.*rebn"):
        build_batch([_record("a", "completed", [1.0])], 1.0, "rbn")


def test_parquet_without_pyarrow_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame, about = build_batch([_record("a", "completed", [1.0])], 1.0, "rebn")
    monkeypatch.setattr(batch_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UserError, match=r"gem-eval\[rl\]"):
        write_batch(frame, about, tmp_path, ["parquet"])
    assert [p.name for p in write_batch(frame, about, tmp_path, ["jsonl"])] == [
        "transitions.jsonl",
        "batch.json",
    ]
