"""ATIF, the Agent Trajectory Interchange Format, as pydantic models.

Written from Harbor's RFC 0001 "Agent Trajectory Interchange Format (ATIF)
Specification", v1.7 (April 2026; harbor-framework/harbor ``rfcs/0001-trajectory-format.md``),
and v1.8 as Harbor 0.26 defines it (its ``harbor.models.trajectories`` models): v1.8 adds
audio content parts (``type: "audio"`` with an :class:`AudioSource`), nothing else.
Every object forbids unknown fields (custom data goes in ``extra``), required fields are
required, and the rules the RFC states in prose are checked too:

* ``step_id`` runs 1, 2, 3 ... in order;
* an observation result's ``source_call_id`` names a tool call of the same step, and a
  step's tool call ids are distinct;
* ``model_name``, ``reasoning_effort``, ``reasoning_content``, ``tool_calls`` and
  ``metrics`` appear on agent steps only; an agent step with ``llm_call_count == 0`` has
  no ``metrics`` or ``reasoning_content``;
* a content part has ``text`` exactly when it is text, and ``source`` exactly when it is an
  image or audio, of that kind (an image's source names an image type);
* a subagent reference sets ``trajectory_id`` or ``trajectory_path``; embedded subagents
  carry distinct ``trajectory_id``\\ s;
* timestamps are ISO 8601.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ATIF_VERSION = "ATIF-v1.7"
"""The version gem-eval writes: the oldest that has every field it uses (``llm_call_count``,
``extra`` on tool calls and results), so that readers of v1.7 (Harbor before 0.26) read
its documents too. v1.8 only adds audio, which gem-eval never records."""

AtifVersion = Literal[
    "ATIF-v1.0",
    "ATIF-v1.1",
    "ATIF-v1.2",
    "ATIF-v1.3",
    "ATIF-v1.4",
    "ATIF-v1.5",
    "ATIF-v1.6",
    "ATIF-v1.7",
    "ATIF-v1.8",
]
"""Every published version (a v1.8 reader reads them all)."""


class _Atif(BaseModel):
    # strict: a "3" is not a step id, a 1 is not a string
    model_config = ConfigDict(extra="forbid", strict=True)


class ImageSource(_Atif):
    """Where an image of a multimodal message lives (a path or a URL)."""

    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    path: str


AudioMediaType = Literal[
    "audio/wav",
    "audio/mpeg",
    "audio/mp4",
    "audio/aac",
    "audio/ogg",
    "audio/flac",
    "audio/webm",
    "audio/aiff",
]

_AUDIO_ALIASES = {
    "audio/mp3": "audio/mpeg",
    "audio/mpga": "audio/mpeg",
    "audio/x-mpeg": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-m4a": "audio/mp4",
    "audio/m4a": "audio/mp4",
    "audio/x-aac": "audio/aac",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
}
"""Spellings of audio types that v1.8 accepts and reads as the registered one (producers
copy ``audio/mp3`` from provider responses, though it is no registered type)."""


class AudioSource(_Atif):
    """Where the audio of a message lives (a path or a URL), and how long it is (v1.8+)."""

    media_type: AudioMediaType
    path: str
    duration_sec: float | None = Field(default=None, ge=0)

    @field_validator("media_type", mode="before")
    @classmethod
    def _registered_spelling(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.strip().lower()
            return _AUDIO_ALIASES.get(value, value)
        return value


class ContentPart(_Atif):
    """One part of a multimodal message or observation (v1.6+; audio v1.8+)."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: ImageSource | AudioSource | None = None

    @model_validator(mode="after")
    def _fields_match_type(self) -> ContentPart:
        if (self.type == "text") != (self.text is not None):
            raise ValueError("'text' is required for, and only for, type 'text'")
        if (self.type == "text") != (self.source is None):
            raise ValueError("'source' is required for, and only for, type 'image' or 'audio'")
        kind = {"image": ImageSource, "audio": AudioSource}.get(self.type)
        if kind is not None and not isinstance(self.source, kind):
            raise ValueError(f"type {self.type!r} needs a {kind.__name__}")
        return self


Content = str | list[ContentPart]


class ToolCall(_Atif):
    """One tool or function call of an agent step."""

    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class SubagentTrajectoryRef(_Atif):
    """A delegated subagent's trajectory: embedded (``trajectory_id``) or in a file."""

    trajectory_id: str | None = None
    trajectory_path: str | None = None
    session_id: str | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _resolvable(self) -> SubagentTrajectoryRef:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise ValueError("a subagent reference needs trajectory_id or trajectory_path")
        return self


class ObservationResult(_Atif):
    """The result of one tool call (``source_call_id``) or of an action without one."""

    source_call_id: str | None = None
    content: Content | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Atif):
    """What the environment or the system answered in a step."""

    results: list[ObservationResult]


class Metrics(_Atif):
    """One step's model usage; ``prompt_tokens`` includes ``cached_tokens``."""

    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    cached_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Atif):
    """Totals over the whole trajectory."""

    total_prompt_tokens: int | None = Field(default=None, ge=0)
    total_completion_tokens: int | None = Field(default=None, ge=0)
    total_cached_tokens: int | None = Field(default=None, ge=0)
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Agent(_Atif):
    """The agent system that produced the trajectory."""

    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class Step(_Atif):
    """One system prompt, one user message, or one agent turn (a model call, its tool
    calls and what they returned)."""

    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: Content
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    is_copied_context: bool | None = None
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from exc
        return value

    @model_validator(mode="after")
    def _step_rules(self) -> Step:
        if self.source != "agent":
            for name in _AGENT_ONLY:
                if getattr(self, name) is not None:
                    raise ValueError(f"{name!r} belongs to agent steps, not {self.source!r} ones")
        elif self.llm_call_count == 0 and (
            self.metrics is not None or self.reasoning_content is not None
        ):
            raise ValueError("a step of no LLM call (llm_call_count 0) has no metrics or reasoning")
        ids = [call.tool_call_id for call in self.tool_calls or []]
        if len(set(ids)) != len(ids):
            raise ValueError(f"step {self.step_id} repeats a tool_call_id: {ids}")
        for result in self.observation.results if self.observation else []:
            if result.source_call_id is not None and result.source_call_id not in ids:
                raise ValueError(
                    f"step {self.step_id}: observation result for {result.source_call_id!r}, "
                    "which is none of the step's tool calls"
                )
        return self


class Trajectory(_Atif):
    """One ATIF document: an agent's whole run."""

    schema_version: AtifVersion
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    subagent_trajectories: list[Trajectory] | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _document_rules(self) -> Trajectory:
        for index, step in enumerate(self.steps):
            if step.step_id != index + 1:
                raise ValueError(
                    f"steps[{index}].step_id is {step.step_id}; step ids run 1, 2, 3 ..."
                )
        embedded = [sub.trajectory_id for sub in self.subagent_trajectories or []]
        if None in embedded:
            raise ValueError("an embedded subagent trajectory needs a trajectory_id")
        if len(set(embedded)) != len(embedded):
            raise ValueError(f"embedded subagent trajectory_ids repeat: {embedded}")
        return self

    def to_json(self) -> str:
        """The document as JSON, without the fields left unset (``None``)."""
        return self.model_dump_json(exclude_none=True, indent=2)
