"""An env that refuses its arguments, or a generation setting of the wrong type, is the
run's configuration (``config_error``: not scored, stops the run, exit 2, not replayed
as a retryable ``env_error``); an env that fails while playing stays ``env_error``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from gem_eval.core import Env
from gem_eval.models import ScriptedModel
from gem_eval.outcomes import OUTCOMES
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.registration import _REGISTRY, list_envs, register
from gem_eval.runner import EXIT_CONFIG_ERROR, EXIT_INCOMPLETE, LocalExecutor, Runner
from tests.fakes import FakeEnv


def strict_env(length: int = 3, fail_at: int | None = None, question: str = "") -> Env:
    if length < 1:
        raise ValueError("length must be at least 1")
    return FakeEnv(length=length, fail_at=fail_at)


@pytest.fixture(autouse=True)
def env_id() -> Iterator[str]:
    list_envs()
    register("argtest:Strict-v0", strict_env, override=True)
    yield "argtest:Strict-v0"
    del _REGISTRY["argtest:Strict-v0"]


def episodes(
    n: int, env_kwargs: dict[str, Any], sample_kwargs: dict[str, Any] | None = None, **model: Any
) -> list[EpisodeSpec]:
    task = TaskSpec(id="t", env_id="argtest:Strict-v0", env_kwargs=env_kwargs)
    spec = ModelSpec(name="scripted", **model)
    return [
        EpisodeSpec(
            key=EpisodeSpec.make_key("scripted", "t", i, 0),
            task=task,
            model=spec,
            sample=i,
            epoch=0,
            seed=i,
            sample_kwargs=sample_kwargs or {},
            last_attempt=True,
        )
        for i in range(n)
    ]


def play(specs: list[EpisodeSpec]) -> tuple[Any, list[EpisodeRecord]]:
    executor = LocalExecutor(lambda spec: ScriptedModel(["a"] * 10, name=spec.name))
    seen: list[EpisodeRecord] = []

    async def main() -> Any:
        await executor.start([specs[0].model])
        try:
            return await Runner("r", executor, [seen.append], concurrency=1).run(specs)
        finally:
            await executor.aclose()

    return asyncio.run(main()), seen


def test_an_env_constructor_refusing_its_arguments_is_a_config_error() -> None:
    summary, seen = play(episodes(5, {"length": 0}))
    first = seen[0]
    assert first.outcome == "config_error" and first.score is None
    assert not first.gave_up  # not a capped outcome: nothing for --resume to retry
    assert "length must be at least 1" in (first.trajectory.error or "")  # type: ignore[union-attr]
    assert OUTCOMES[first.outcome].stops_run
    assert summary.stopped_by is not None and "length must be at least 1" in summary.stopped_by
    assert summary.exit_code == EXIT_CONFIG_ERROR
    assert len([r for r in seen if r.outcome == "config_error"]) == 1  # the run stopped


def test_a_row_column_the_env_does_not_take_is_a_config_error() -> None:
    _, seen = play(episodes(1, {}, {"question": "q", "answers": ["x"]}))
    assert seen[0].outcome == "config_error"
    assert "takes no parameter 'answers'" in (seen[0].trajectory.error or "")  # type: ignore[union-attr]


def test_a_field_that_is_also_an_argument_is_a_config_error() -> None:
    _, seen = play(episodes(1, {"length": 2}, {"length": 3}))
    assert seen[0].outcome == "config_error"
    assert "'length' is both in the task's args" in (seen[0].trajectory.error or "")  # type: ignore[union-attr]


def test_a_generation_setting_of_the_wrong_type_is_a_config_error_not_a_bug() -> None:
    summary, seen = play(episodes(2, {}, args={"temperature": "abc", "top_k": 20}))
    assert seen[0].outcome == "config_error"
    error = seen[0].trajectory.error or ""  # type: ignore[union-attr]
    assert "-M temperature: expected a number >= 0 (got 'abc')" in error
    assert "top_k" not in error  # a provider's own setting passes through
    assert summary.exit_code == EXIT_CONFIG_ERROR


def test_an_env_that_fails_while_playing_stays_an_env_error() -> None:
    summary, seen = play(episodes(3, {"fail_at": 1}))
    assert [r.outcome for r in seen] == ["env_error"] * 3  # the run goes on
    assert summary.stopped_by is None and summary.exit_code == EXIT_INCOMPLETE
    assert all(r.gave_up for r in seen)  # capped: --max-attempts bounds the replays


def test_good_arguments_play() -> None:
    summary, seen = play(episodes(2, {"length": 2}, {"question": "q"}))
    assert [r.outcome for r in seen] == ["completed"] * 2
    assert summary.exit_code == 0
