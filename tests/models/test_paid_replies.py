"""``ReplayingModel``: an episode cut mid-way goes on from the calls it paid for, and calls
the model from the first request its record does not hold."""

from __future__ import annotations

import asyncio

import pytest

from gem_eval import make
from gem_eval.agent import Limits, run_episode
from gem_eval.budget import Budget
from gem_eval.models import Message, ModelOutput, ScriptedModel, Usage
from gem_eval.models.base import GenerateConfig, Model, ToolSchema
from gem_eval.models.paid_replies import (
    PaidCall,
    PaidReplies,
    ReplayingModel,
    conversation_digest,
)
from gem_eval.records import EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.runner.scoring import to_record
from gem_eval.trajectory import Step, Trajectory

# Every guess is illegal: the episode plays its five turns, the same ones on every seed.
GAME = {"min_number": 1, "max_number": 1000, "max_turns": 5}
GUESS = ModelOutput(text="\\boxed{1001}", finish_reason="stop", usage=Usage(cost_usd=0.1))


def play(model: Model, budget: Budget | None = None, seed: int = 0) -> Trajectory:
    env = make("game:GuessTheNumber-v0", **GAME)
    return asyncio.run(run_episode(env, model, [], Limits(max_turns=10), seed=seed, budget=budget))


def test_a_cut_episode_replays_its_paid_calls_and_pays_only_for_the_rest() -> None:
    cut = play(ScriptedModel([GUESS]), Budget(0.15))  # the third call finds the cap spent
    assert cut.outcome == "cancelled" and len(cut.steps) == 2
    replies = PaidReplies.of(cut)
    assert replies is not None and len(replies.calls) == 2
    assert replies.cost_usd == pytest.approx(0.2)

    model = ScriptedModel([GUESS])
    replaying = ReplayingModel(model, replies)
    budget = Budget(None)
    again = play(replaying, budget)
    assert again.outcome == "completed" and len(again.steps) == 5
    assert (replaying.replayed, replaying.left, len(model.calls)) == (2, True, 3)
    assert [s.output.replayed for s in again.steps] == [True, True, False, False, False]
    assert again.messages[: len(cut.messages)] == cut.messages  # the cut conversation, on
    assert budget.spent == pytest.approx(0.3)  # the three calls made now, not the replayed

    # The record keeps the whole episode's cost and says what was replayed, paid before.
    spec = EpisodeSpec(
        key="k", task=TaskSpec(id="t", env_id="game:GuessTheNumber-v0"),
        model=ModelSpec(name="scripted"), sample=0, epoch=0, seed=0,
    )  # fmt: skip
    record = to_record("run", spec, again, started_at=0.0)
    assert record.replayed_calls == 2 and record.cost_usd == pytest.approx(0.5)
    assert record.replayed_cost_usd == pytest.approx(0.2)
    assert record.spent_usd == pytest.approx(0.3)


def test_an_attempt_cut_while_it_replayed_loses_no_paid_call() -> None:
    first = play(ScriptedModel([GUESS]), Budget(0.25))
    assert first.outcome == "cancelled" and len(first.steps) == 3
    paid = PaidReplies.of(first)
    assert paid is not None
    budget = Budget(1.0)

    class SpentMeanwhile(ReplayingModel):  # other episodes spend the budget meanwhile
        async def generate(
            self,
            messages: list[Message],
            tools: list[ToolSchema] | None = None,
            config: GenerateConfig | None = None,
        ) -> ModelOutput:
            output = await super().generate(messages, tools, config)
            budget.charge(1.0)
            return output

    second = play(SpentMeanwhile(ScriptedModel([GUESS]), paid), budget)
    assert second.outcome == "cancelled" and len(second.steps) == 1  # one call replayed
    replayed = PaidReplies.of(second)
    assert replayed is not None
    paid.add(replayed)  # every attempt's calls, each once
    assert len(paid.calls) == 3 and paid.cost_usd == pytest.approx(0.3)
    model = ScriptedModel([GUESS])
    replaying = ReplayingModel(model, paid)
    third = play(replaying)
    assert (third.outcome, replaying.replayed, len(model.calls)) == ("completed", 3, 2)


def test_a_request_that_differs_ends_the_replay_for_good() -> None:
    first: list[Message] = [{"role": "user", "content": "q1"}]
    second = [*first, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}]
    third = [*second, {"role": "assistant", "content": "a2"}, {"role": "user", "content": "q3"}]
    replies = PaidReplies(
        calls=[
            PaidCall(request=conversation_digest(m), output=ModelOutput(text=text))
            for m, text in ((first, "a1"), (second, "a2"), (third, "a3"))
        ]
    )
    model = ScriptedModel(["live"])
    replaying = ReplayingModel(model, replies)

    async def calls() -> list[ModelOutput]:
        changed = [
            *first,
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "Q2"},
        ]
        return [
            await replaying.generate(first),  # as recorded: replayed
            await replaying.generate(changed),  # the env asked otherwise: the model answers
            await replaying.generate(third),  # as recorded, but the episode left the record
        ]

    outputs = asyncio.run(calls())
    assert [(o.text, o.replayed) for o in outputs] == [
        ("a1", True), ("live", False), ("live", False),
    ]  # fmt: skip
    assert replaying.left and replaying.replayed == 1 and len(model.calls) == 2


def test_an_env_that_answers_otherwise_is_answered_by_the_model_from_there() -> None:
    # The secret of seed 0 is below 900, that of seed 2 above: the second question differs.
    recorded = play(ScriptedModel(["\\boxed{900}"]), seed=0)
    replies = PaidReplies.of(recorded)
    assert replies is not None and len(replies.calls) == 5
    model = ScriptedModel(["\\boxed{900}"])
    replaying = ReplayingModel(model, replies)
    other = play(replaying, seed=2)
    assert other.steps[0].observation != recorded.steps[0].observation
    assert (replaying.replayed, replaying.left, len(model.calls)) == (1, True, 4)
    assert [s.output.replayed for s in other.steps] == [True, False, False, False, False]


def test_an_agent_programs_calls_replay_up_to_its_first_failed_call() -> None:
    def step(index: int, base: int | None, messages: list[Message], **info: object) -> Step:
        request = {"from": base, "messages": messages}
        return Step(
            index=index, output=ModelOutput(text=f"a{index}"), info={"request": request, **info}
        )

    u0: Message = {"role": "user", "content": "u0"}
    u1: Message = {"role": "user", "content": "u1"}
    traj = Trajectory(
        env_id="e", model="m", agent="terminus-2",
        steps=[step(0, None, [u0]), step(1, 0, [u1]), step(2, 1, [], error="500 boom")],
    )  # fmt: skip
    replies = PaidReplies.of(traj)
    assert replies is not None
    assert [c.request for c in replies.calls] == [
        conversation_digest([u0]),
        conversation_digest([u0, {"role": "assistant", "content": "a0"}, u1]),
    ]


def test_a_trajectory_without_its_calls_conversation_replays_nothing() -> None:
    graded = Trajectory(env_id="e", model="m")
    graded.grade_end(0.0, {})  # no call was made: one empty step, no assistant message
    assert PaidReplies.of(graded) is None
    assert PaidReplies.of(Trajectory(env_id="e", model="m")) is None
