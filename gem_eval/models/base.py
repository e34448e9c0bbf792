"""The model interface: one async ``generate`` call, and the records it returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel, Field, field_validator

from gem_eval.models.tokens import TOKEN_REQUEST, TokenTrace

Message = dict[str, Any]
"""An OpenAI-style chat message (``role``, ``content``, optional ``tool_calls`` ...)."""

ToolSchema = dict[str, Any]
"""An OpenAI function-tool schema: ``{"type": "function", "function": {...}}``."""


class ToolCall(BaseModel):
    """One tool call as the model wrote it.

    ``arguments`` stays the raw text the model produced (usually JSON): the agent loop
    parses it, so that malformed arguments become an error message for the model.
    """

    id: str
    name: str
    arguments: str = "{}"


class Usage(BaseModel):
    """Token counts and cost of one or more model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost_usd=cost,
        )


class ModelOutput(BaseModel):
    """What one ``generate`` call produced."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    retries: int = 0
    model: str = ""
    tokens: TokenTrace | None = None
    """Token ids and log-probabilities, when asked for (``GenerateConfig.return_tokens``)
    and the server returned them."""
    cached: bool = False
    """Served from the response cache (:mod:`gem_eval.models.response_cache`) instead of
    the model: no call was made, ``usage.cost_usd`` is 0 and ``latency_s`` about 0."""
    replayed: bool = False
    """Replayed from the record of an earlier attempt of its episode, which paid for it
    (:mod:`gem_eval.models.paid_replies`): no call was made now; ``usage`` is what the
    call cost then, already counted against the run's budget."""

    def message(self, tool_calls: bool = True) -> Message:
        """The assistant message this reply adds to a conversation (with its native tool
        calls unless ``tool_calls`` is False: the text protocol's calls are in the text)."""
        message: Message = {"role": "assistant", "content": self.text}
        if tool_calls and self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message


class GenerateConfig(BaseModel):
    """Generation settings; ``None`` leaves the provider's default.

    Attributes:
        extra: Provider-specific arguments passed through unchanged.
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    reasoning_effort: str | None = None
    stop: list[str] | None = None
    return_tokens: bool = False
    """Ask the server for token ids and log-probabilities (see
    :mod:`gem_eval.models.tokens`): for RL export from your own server."""
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("stop", mode="before")
    @classmethod
    def _one_stop(cls, value: Any) -> Any:
        """``-M stop=###`` gives one string: a list of it (as the APIs take it)."""
        return [value] if isinstance(value, str) else value

    def sampling_args(self) -> dict[str, Any]:
        """The settings a chat-completions request takes, without the unset ones."""
        args = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "reasoning_effort": self.reasoning_effort,
            "stop": self.stop,
        }
        tokens = TOKEN_REQUEST if self.return_tokens else {}
        return {k: v for k, v in args.items() if v is not None} | tokens | self.extra


class Model(ABC):
    """A chat model. Implementations: :class:`~gem_eval.models.LiteLLMModel`,
    :class:`~gem_eval.models.OpenAICompatModel`, :class:`~gem_eval.models.ScriptedModel`.

    Attributes:
        name: How results name this model (e.g. ``openai/gpt-5``).
        default_concurrency: Calls in flight at once unless the run says otherwise.
        max_episodes: Episodes played with this model at once, whatever the run's
            concurrency; ``None``: no limit of its own. A server that decodes one
            request at a time and keeps one prompt cache (llama.cpp) sets 1: episodes
            taking turns call by call would evict each other's cache, so that every
            call would read its whole conversation again.
        supports_tools: Whether native function calling is available.
    """

    name: str = "model"
    default_concurrency: int = 20
    max_episodes: int | None = None
    supports_tools: bool = True

    @abstractmethod
    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        """Answer ``messages``; may return tool calls when ``tools`` are offered.

        Raises:
            ModelCallError: The call failed for good (after retries).
        """

    async def start(self) -> None:  # noqa: B027 - optional lifecycle hook
        """Acquire resources (start a local server, check credentials)."""

    async def aclose(self) -> None:  # noqa: B027 - optional lifecycle hook
        """Release resources. Safe to call twice."""

    async def __aenter__(self) -> Model:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ModelWrapper(Model):
    """A model that answers through ``inner`` for one episode (a cache, a replay): it
    takes ``inner``'s name and traits, and passes on every attribute it does not set
    (``api_base``, ``limit`` ...). It starts and closes nothing: ``inner`` is the run's."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports_tools = inner.supports_tools
        self.default_concurrency = inner.default_concurrency
        self.max_episodes = inner.max_episodes

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes not set here.
        inner = self.__dict__.get("inner")
        if inner is None:  # not initialised (a copy being made)
            raise AttributeError(name)
        return getattr(inner, name)
