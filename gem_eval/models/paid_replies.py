"""Paid replies: the model calls the earlier attempts of an episode made, answered again
when ``--resume`` plays the episode on from where it was cut.

An episode that a spent budget (``--max-cost``) or a failure cut mid-way keeps every call
it made in its record (its trajectory's steps), and they were paid for. ``--resume`` hands
them to the episode again (:class:`PaidReplies`, on its
:class:`~gem_eval.records.EpisodeSpec`, so that they travel to Ray's nodes too), and its
model answers each request an earlier attempt already made from its record
(:class:`ReplayingModel`): a seeded env asks the same questions, so only the calls after
the cut reach the model. At the first request no attempt made, the replay ends: the model
answers that call and every later one. The replies of every attempt since the episode was
first cut count, not only the last one's: an attempt cut again while it was still
replaying holds fewer calls than were paid for.

A request is compared by the digest of its messages (:func:`conversation_digest`): in
gem-eval's loop, the whole conversation so far. The tools and generation settings are not
part of it: they are what the run measures, which ``--resume`` does not change unless
forced, and replies recorded before a forced change are not replayed (see
:func:`gem_eval.runner.resume.with_paid_replies`).

A replayed reply keeps its recorded usage and cost, so that the episode's tokens and cost
stay whole, and says ``replayed``: it was counted in the earlier attempt's record, so the
run's budget does not count it again (see
:attr:`~gem_eval.records.EpisodeRecord.spent_usd`).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from gem_eval.models.base import (
    GenerateConfig,
    Message,
    Model,
    ModelOutput,
    ModelWrapper,
    ToolSchema,
)

if TYPE_CHECKING:
    from gem_eval.trajectory import Trajectory


def conversation_digest(messages: list[Message]) -> str:
    """The sha256 of the canonical JSON of ``messages``: a request, as a replay compares it."""
    text = json.dumps(
        messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()


class PaidCall(BaseModel):
    """One call an earlier attempt made: the digest of what it sent, and the reply."""

    request: str
    """:func:`conversation_digest` of the messages the call sent."""
    output: ModelOutput


class PaidReplies(BaseModel):
    """The calls the earlier attempts of an episode made, each request once, for it to
    replay."""

    calls: list[PaidCall] = Field(default_factory=list)

    def add(self, other: PaidReplies) -> None:
        """Add ``other``'s calls whose requests are not here yet."""
        known = {c.request for c in self.calls}
        self.calls += [c for c in other.calls if c.request not in known]

    @property
    def cost_usd(self) -> float:
        """What the calls cost when they were made (unpriced ones: nothing)."""
        return sum(c.output.usage.cost_usd or 0.0 for c in self.calls)

    @classmethod
    def of(cls, trajectory: Trajectory) -> PaidReplies | None:
        """The calls ``trajectory`` made that a replay can answer, or ``None`` (none).

        gem-eval's loop appends one assistant message per call, in step order: a call
        sent the messages before its step's. An agent program's calls each keep their
        own request; its replay stops at its first failed call (no reply was paid for).
        """
        steps = trajectory.steps
        if trajectory.agent is not None:
            requests = trajectory.agent_requests()
            failed = next((s.index for s in steps if "error" in s.info), len(steps))
            requests = requests[:failed]
        else:
            messages = trajectory.messages
            assistant_at = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
            if len(assistant_at) != len(steps):  # not the loop's conversation: not replayed
                return None
            requests = [messages[:i] for i in assistant_at]
        calls = [
            PaidCall(request=conversation_digest(sent), output=step.output)
            for sent, step in zip(requests, steps, strict=False)
        ]
        return cls(calls=calls) if calls else None


class ReplayingModel(ModelWrapper):
    """``inner`` for one episode, each request ``replies`` holds answered from there until
    the first that it does not hold; from that one on, ``inner`` answers.

    Args:
        inner: The model that answers what the record does not hold.
        replies: The calls the episode's earlier attempts made.

    Attributes:
        replayed: Calls answered from the record so far.
        left: The episode left the record (a request was new): no more replays.
    """

    def __init__(self, inner: Model, replies: PaidReplies) -> None:
        super().__init__(inner)
        self.paid = {c.request: c.output for c in replies.calls}
        self.replayed = 0
        self.left = False

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        if not self.left:
            paid = self.paid.get(conversation_digest(messages))
            if paid is not None:
                self.replayed += 1
                return paid.model_copy(update={"replayed": True}, deep=True)
            self.left = True
        return await self.inner.generate(messages, tools, config)
