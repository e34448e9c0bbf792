"""The local executor plays at most ``Model.max_episodes`` episodes of a model at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from gem_eval.core import ResetResult
from gem_eval.models import ScriptedModel
from gem_eval.models.base import GenerateConfig, Message, ModelOutput, ToolSchema
from gem_eval.records import EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.registration import _REGISTRY, list_envs, register
from gem_eval.runner import LocalExecutor, Runner
from tests.fakes import FakeEnv

ENV_ID = "slotstest:Counted-v0"


class Counted(FakeEnv):
    """A FakeEnv that counts the episodes under way (reset, not yet closed)."""

    playing = 0
    most = 0

    def reset(self, seed: int | None = None) -> ResetResult:
        Counted.playing += 1
        Counted.most = max(Counted.most, Counted.playing)
        return super().reset(seed)

    def close(self) -> None:
        Counted.playing -= 1
        super().close()


class SlowScripted(ScriptedModel):
    """Takes a moment per call, so that episodes played at once would overlap."""

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        await asyncio.sleep(0.01)
        return await super().generate(messages, tools, config)


class OneSlot(SlowScripted):
    max_episodes = 1


@pytest.fixture(autouse=True)
def counted() -> Iterator[None]:
    list_envs()
    register(ENV_ID, Counted, override=True)
    Counted.playing = Counted.most = 0
    yield
    del _REGISTRY[ENV_ID]


def play(model_class: type[ScriptedModel], n: int = 4) -> int:
    """Play ``n`` episodes, all allowed at once by the run; return the most at once."""
    task = TaskSpec(id="t", env_id=ENV_ID)
    model = ModelSpec(name="scripted")
    specs = [
        EpisodeSpec(
            key=EpisodeSpec.make_key("scripted", "t", i, 0),
            task=task,
            model=model,
            sample=i,
            epoch=0,
            seed=i,
            last_attempt=True,
        )
        for i in range(n)
    ]
    executor = LocalExecutor(lambda spec: model_class(["a"], name=spec.name))

    async def main() -> None:
        await executor.start([model])
        try:
            summary = await Runner("r", executor, concurrency=n).run(specs)
        finally:
            await executor.aclose()
        assert summary.status == "finished"

    asyncio.run(main())
    return Counted.most


def test_a_model_that_plays_one_episode_at_a_time_gets_them_in_turn() -> None:
    assert play(OneSlot) == 1


def test_other_models_play_as_many_as_the_run_allows() -> None:
    assert play(SlowScripted) == 4
