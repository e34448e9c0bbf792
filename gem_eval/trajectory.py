"""The record of one episode: every message, call, result, reward and cost.

Versioned (``schema_version``) pydantic models: the file format is a contract.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from gem_eval.models.base import Message, ModelOutput, Usage
from gem_eval.outcomes import Outcome, is_scored
from gem_eval.returns import Returns

SCHEMA_VERSION = 2
"""2: a tool event's output is stored once, in the message the model read it from
(``output_at``); version 1 records (output in both places) still load."""

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
    """A whole episode.

    A tool's output is both in ``messages`` (what the model read) and in its
    :class:`ToolEvent`; in JSON it is written once: the event gets ``output_at``
    (``[message index, start, end]``) instead of ``output`` and reads it back on load.
    Read a record with :meth:`model_validate_json` (or ``EpisodeRecord``'s) to get the
    outputs back; a Python ``model_dump()`` keeps them whole.
    """

    schema_version: int = SCHEMA_VERSION
    env_id: str
    model: str
    seed: int | None = None
    tool_mode: str = "native"
    agent: str | None = None
    """The agent that played (``--agent``); ``None``: gem-eval's own loop."""
    agent_run: dict[str, Any] | None = None
    """An agent program's own report: ``setup_s`` and ``run_s`` (its install and its
    work, apart), ``version``, ``timed_out``, its ``turns`` (what it said and did each
    turn) and what else it told (see :class:`gem_eval.agents.AgentResult`)."""
    initial_observation: str = ""
    messages: list[Message] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome = "completed"
    """How it ended: see :mod:`gem_eval.outcomes`."""
    truncated_by: Limit | None = None
    error: str | None = None
    traceback: str | None = None
    """For a ``harness_error``: where gem-eval's own code failed."""
    usage: Usage = Field(default_factory=Usage)
    retries: int = 0
    duration_s: float = 0.0
    queued_s: float = 0.0
    """Seconds of ``duration_s`` spent waiting for a model's connection slot that other
    episodes held: not counted against ``max_time_s``."""
    success: bool = False

    @model_serializer(mode="wrap")
    def _store_outputs_once(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        data = handler(self)
        messages = data.get("messages") if isinstance(data, dict) else None
        if not messages or not info.mode_is_json():  # files only; Python dumps stay whole
            return data
        cursor = 0
        for step in data.get("steps", []):
            for event in step.get("tool_events", []):
                output = event.get("output")
                if not output:
                    continue
                for index in range(cursor, len(messages)):
                    content = messages[index].get("content")
                    start = content.find(output) if isinstance(content, str) else -1
                    if start >= 0:
                        del event["output"]
                        event["output_at"] = [index, start, start + len(output)]
                        cursor = index + 1
                        break
        return data

    @model_validator(mode="before")
    @classmethod
    def _read_outputs_back(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("messages"):
            return data
        messages = data["messages"]

        def event_read(event: Any) -> Any:
            if not isinstance(event, dict) or "output_at" not in event:
                return event
            index, start, end = event["output_at"]
            rest = {k: v for k, v in event.items() if k != "output_at"}
            return {**rest, "output": messages[index]["content"][start:end]}

        def step_read(step: Any) -> Any:
            if not isinstance(step, dict) or not step.get("tool_events"):
                return step
            return {**step, "tool_events": [event_read(e) for e in step["tool_events"]]}

        return {**data, "steps": [step_read(s) for s in data.get("steps") or []]}

    def grade_end(self, reward: float, info: dict[str, Any], *, truncated: bool = False) -> None:
        """Put the env's grade of the end state on the last step (a step with no model
        output when none was played): the reward, its ``info``, and ``success``; the step
        ends the episode (``truncated`` when a limit stopped the agent)."""
        if not self.steps:
            self.steps.append(Step(index=0, output=ModelOutput(text="")))
        step = self.steps[-1]
        step.action, step.reward = "", reward
        step.truncated = step.truncated or truncated
        step.terminated = step.terminated or not truncated
        step.info = {**step.info, **info}
        self.success = bool(info.get("success", reward > 0))

    def agent_requests(self) -> list[list[Message]]:
        """For an agent program's episode, the messages each call sent, rebuilt from the
        steps' ``info["request"]`` (a call's new messages after the one it extends, see
        :mod:`gem_eval.agents.episode`); empty for gem-eval's own loop."""
        if self.agent is None:
            return []
        requests: list[list[Message]] = []
        for step in self.steps:
            request = step.info.get("request") or {}
            sent = list(request.get("messages") or [])
            base = request.get("from")
            if isinstance(base, int) and 0 <= base < len(requests):
                sent = [*requests[base], self.steps[base].output.message(), *sent]
            requests.append(sent)
        return requests

    @property
    def rewards(self) -> list[float]:
        """The reward of every turn, in order: one turn is one model action and what
        answered it, the env or the tools (a tool-only turn earns 0 from the agent loop;
        :class:`~gem_eval.wrappers.ToolEnv` may give ``tool_reward``). See
        :mod:`gem_eval.returns`."""
        return [s.reward for s in self.steps]

    @property
    def scored(self) -> bool:
        """Whether the episode counts in scores (see :mod:`gem_eval.outcomes`)."""
        return is_scored(self.outcome)
