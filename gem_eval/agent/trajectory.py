"""The record of one episode: every message, call, result, reward and cost.

Versioned (``schema_version``) pydantic models: the file format is a contract.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gem_eval.models.base import Message, ModelOutput, Usage
from gem_eval.wrappers.episode_stats import Returns

SCHEMA_VERSION = 1

Outcome = Literal["completed", "truncated", "model_error", "env_error", "infra_error"]
"""How an episode ended.

* ``completed``: the env ended it (solved, lost, or out of the env's own turns).
* ``truncated``: a harness limit ended it; ``truncated_by`` names the limit.
* ``model_error``: the model's API refused the call for good (400, 401, 404 ...).
* ``env_error``: the env raised.
* ``infra_error``: a transient failure (rate limit, 5xx, timeout, connection, malformed
  reply) outlasted the retries. Not the model's fault: exclude it from scores and
  report it; never count it as a 0.
"""

SCORED_OUTCOMES = ("completed", "truncated", "model_error")
"""Outcomes that count in scores; the others (``env_error``, ``infra_error``, and a
record's ``cancelled``) are excluded from denominators, reported apart, and played again
by ``--resume``."""

Limit = Literal["max_turns", "max_tokens", "max_time", "max_cost"]


class ToolEvent(BaseModel):
    """One tool call and its result."""

    call_id: str
    name: str
    arguments: str
    output: str
    is_error: bool = False
    latency_s: float = 0.0


class Step(BaseModel):
    """One model call and what followed it: tool results, or an env step."""

    index: int
    output: ModelOutput
    tool_events: list[ToolEvent] = Field(default_factory=list)
    action: str | None = None
    observation: str | None = None
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


class Trajectory(Returns, BaseModel):
    """A whole episode."""

    schema_version: int = SCHEMA_VERSION
    env_id: str
    model: str
    seed: int | None = None
    tool_mode: str = "native"
    initial_observation: str = ""
    messages: list[Message] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome = "completed"
    truncated_by: Limit | None = None
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    retries: int = 0
    duration_s: float = 0.0
    success: bool = False

    @property
    def rewards(self) -> list[float]:
        """The reward of every env step, in order (tool-only steps earn none)."""
        return [s.reward for s in self.steps if s.action is not None]

    @property
    def scored(self) -> bool:
        """False for episodes that an infrastructure or env failure cut short."""
        return self.outcome in SCORED_OUTCOMES
