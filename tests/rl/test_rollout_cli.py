"""``gem-eval rollout`` end to end against the fixture server, and the batch it writes:
the same returns and advantages as ``play`` and ``run`` give for the same episodes, a
Parquet/JSONL round trip, and the three documented ways of reading a batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from gem_eval import make
from gem_eval.rl.batch import COLUMNS, build_batch, read_batch
from gem_eval.rl.estimators import Transitions, advantages
from gem_eval.rl.views import token_rows, trl_records
from gem_eval.rollout import rollout
from gem_eval.store import RunDir
from tests.e2e.test_run_cli import gem_eval, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply

ENV = "game:GuessTheNumber-v0-easy"  # 1..10, 4 guesses
GUESSES = [5, 8, 3]  # the same three guesses in every episode: secrets make them differ
GAMMA = 0.9


def _turn(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


def _guessing(body: dict[str, Any]) -> Reply:
    return Reply(f"\\boxed{{{GUESSES[_turn(body)]}}}")


@pytest.fixture(scope="module")
def batch_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One rollout run (3 samples x 2 epochs, at most 3 turns) and its batch."""
    from tests.fixtures.openai_server import serve

    root = tmp_path_factory.mktemp("rollout")
    with serve(_guessing) as server:
        result = gem_eval(
            "rollout", ENV, "-m", "hosted_vllm/fake", "--model-base-url", server.base_url,
            "--model-backend", "openai", "--episodes", "3", "--epochs", "2",
            "--max-turns", "3", "--gamma", str(GAMMA), "--estimator", "rebn",
            "--out", str(root / "batch"), "-q",
            results=root / "results",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    assert "batch: " in result.stdout and "with token ids" in result.stdout
    return root / "batch", root / "results"


def _played(seed: int) -> list[float]:
    """``G_t`` of the same three guesses played by a policy, as ``gem-eval play`` does."""
    guesses = iter(GUESSES)
    traj = rollout(make(ENV), lambda obs, env: f"\\boxed{{{next(guesses)}}}", seed, max_turns=3)
    return traj.returns_to_go(GAMMA)


def test_returns_and_advantages_agree_with_play(batch_dir: tuple[Path, Path]) -> None:
    frame = read_batch(batch_dir[0])
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == frame["turns"].groupby(frame["episode"]).first().sum()
    assert frame["episode"].nunique() == 6 and frame["group"].nunique() == 3
    played: list[float] = []
    for _, episode in frame.groupby("episode", sort=False):
        expected = _played(int(episode["seed"].iloc[0]))
        assert episode["return"].tolist() == pytest.approx(expected)
        played += expected
    assert len(set(np.round(played, 9))) > 2  # the secrets differ: not a constant batch
    episode_ids = pd.factorize(frame["episode"])[0]
    mine = advantages("rebn", Transitions.of(played, episode_ids))
    assert frame["advantage"].to_numpy() == pytest.approx(mine)
    assert frame["advantage"].mean() == pytest.approx(0.0, abs=1e-9)


def test_run_records_give_the_same_batch(
    batch_dir: tuple[Path, Path], tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.handler = _guessing
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: same\ntasks:\n  - id: {ENV}\n    env: {ENV}\n    samples: 3\n")
    result = gem_eval(
        "run", "-s", str(suite), "-m", "hosted_vllm/fake", "--model-base-url",
        openai_server.base_url, "--model-backend", "openai", "--epochs", "2",
        "--max-turns", "3", "-q", results=tmp_path / "results",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [run] = run_dirs(tmp_path / "results")
    from_run, _ = build_batch(RunDir(run).latest_by_key().values(), GAMMA, "rebn")
    from_rollout = read_batch(batch_dir[0])
    for column in ("seed", "turn", "reward", "return", "episode_return", "advantage", "action"):
        assert from_run[column].tolist() == pytest.approx(from_rollout[column].tolist())


def test_parquet_and_jsonl_hold_the_same_batch(batch_dir: tuple[Path, Path]) -> None:
    folder = batch_dir[0]
    about = json.loads((folder / "batch.json").read_text())
    assert about["schema_version"] == 1 and about["estimator"] == "rebn"
    assert about["files"] == ["transitions.parquet", "transitions.jsonl"]
    parquet = read_batch(folder / "transitions.parquet")
    jsonl = read_batch(folder / "transitions.jsonl")
    [run] = run_dirs(batch_dir[1])
    again, _ = build_batch(RunDir(run).latest_by_key().values(), GAMMA, "rebn")
    for frame in (parquet, jsonl):
        assert len(frame) == len(again) == about["transitions"]
        for column in COLUMNS:
            left = [_plain(v) for v in frame[column]]
            right = [_plain(v) for v in again[column]]
            assert left == right, column


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float):
        return round(value, 12)
    return value


def test_token_rows_give_each_completion_token_its_advantage(
    batch_dir: tuple[Path, Path],
) -> None:
    frame = read_batch(batch_dir[0])
    tokens = token_rows(frame)
    lengths = [len(ids) for ids in frame["completion_token_ids"]]
    assert len(tokens) == sum(lengths) and min(lengths) >= 2
    for i, group in tokens.groupby("transition"):
        row = frame.iloc[int(i)]
        assert group["token_id"].tolist() == list(row["completion_token_ids"])
        assert group["logprob"].tolist() == pytest.approx(list(row["logprobs"]))
        assert set(group["advantage"]) == {row["advantage"]}
        assert group["position"].tolist() == list(range(len(group)))


def test_trl_records_are_conversations_ending_in_the_action(
    batch_dir: tuple[Path, Path],
) -> None:
    frame = read_batch(batch_dir[0])
    records = trl_records(frame)
    assert len(records) == len(frame)
    for record, (_, row) in zip(records, frame.iterrows(), strict=True):
        assert record["prompt"][-1]["role"] == "user"
        assert record["completion"] == [{"role": "assistant", "content": row["action"]}]
        assert record["advantage"] == pytest.approx(row["advantage"])
        turns_before = sum(m["role"] == "assistant" for m in record["prompt"])
        assert turns_before == row["turn"]
