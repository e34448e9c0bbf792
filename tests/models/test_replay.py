"""``ReplayModel``: an episode played again from its record ends as the record did, or
says that it left the record."""

from __future__ import annotations

import asyncio

from gem_eval import make
from gem_eval.agent import Limits, run_episode
from gem_eval.errors import ModelCallError
from gem_eval.models import GenerateConfig, Message, ModelOutput, ScriptedModel, tool_call
from gem_eval.models.base import Model, ToolSchema
from gem_eval.models.replay import ReplayModel
from gem_eval.trajectory import Trajectory
from tests.agent.test_loop import Add

# game:GuessTheNumber-v0-easy with seed 0 hides 7.
EASY, SEED = "game:GuessTheNumber-v0-easy", 0


def play(model: Model, limits: Limits | None = None, tools: list[Add] | None = None) -> Trajectory:
    return asyncio.run(run_episode(make(EASY), model, tools or [], limits, seed=SEED))


def test_a_replay_gives_the_recorded_outputs_and_the_same_episode() -> None:
    recorded = play(ScriptedModel(["\\boxed{3}", "\\boxed{9}", "\\boxed{7}"]))
    replay = ReplayModel(recorded, "m")
    again = play(replay)
    assert (again.outcome, again.success, replay.calls, replay.overrun) == (
        "completed",
        True,
        3,
        False,
    )
    assert [s.observation for s in again.steps] == [s.observation for s in recorded.steps]
    assert again.rewards == recorded.rewards and again.usage == recorded.usage


def test_an_env_asking_for_more_turns_is_an_overrun() -> None:
    recorded = play(ScriptedModel(["\\boxed{3}", "\\boxed{7}"]))
    cut = recorded.model_copy(update={"steps": recorded.steps[:1]})  # as if 3 had won
    replay = ReplayModel(cut, "m")
    again = play(replay)
    assert replay.overrun and again.outcome == "harness_error"
    assert "asked for turn 2; the record has 1" in (again.error or "")


def test_a_refused_call_is_replayed_as_refused() -> None:
    refusal = ModelCallError("context length exceeded", status=400, transient=False)
    recorded = play(ScriptedModel(["\\boxed{3}", refusal]))
    assert recorded.outcome == "model_error"
    replay = ReplayModel(recorded, "m")
    again = play(replay)
    assert (again.outcome, again.error, replay.overrun) == ("model_error", recorded.error, False)


class Stalls(Model):
    """Answers 3 once, then never answers."""

    def __init__(self) -> None:
        self.calls = 0

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        self.calls += 1
        if self.calls > 1:
            await asyncio.sleep(60)
        return ModelOutput(text="\\boxed{3}")


def test_the_time_limit_hit_while_the_model_answered_is_replayed() -> None:
    recorded = play(Stalls(), Limits(max_time_s=0.3))
    assert (recorded.outcome, recorded.truncated_by, len(recorded.steps)) == (
        "truncated",
        "max_time",
        1,
    )
    replay = ReplayModel(recorded, "m")
    again = play(replay, Limits(max_time_s=0.3))
    assert (again.outcome, again.truncated_by, replay.overrun) == ("truncated", "max_time", False)


def test_tools_are_offered_as_the_recorded_model_had_them() -> None:
    script: list[str | ModelOutput] = [
        ModelOutput(tool_calls=[tool_call("add", {"a": 3, "b": 4})]),
        "\\boxed{7}",
    ]
    native = play(ScriptedModel(script), tools=[Add()])
    again = play(ReplayModel(native, "m"), tools=[Add()])
    assert again.tool_mode == "native" and again.steps[0].tool_events[0].output == "7"
    text = native.model_copy(update={"tool_mode": "text"})
    assert not ReplayModel(text, "m").supports_tools  # the loop teaches it the text protocol
