"""What the HTTP chat models share: limits, retries, and reading a chat completion.

Subclasses send one ``/chat/completions`` request (:meth:`ChatAPIModel._request`);
this class wraps it in the adaptive connection limit, the adaptive per-call timeout and
the retry policy, and turns the reply (litellm's ``ModelResponse`` or openai's
``ChatCompletion``: the same shape) into a :class:`~gem_eval.models.base.ModelOutput`
(:meth:`ChatAPIModel._read`, which a subclass may override).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from gem_eval.models.base import (
    GenerateConfig,
    Message,
    Model,
    ModelOutput,
    ToolCall,
    ToolSchema,
    Usage,
)
from gem_eval.models.call_timeout import CallTimeout, CallTimeoutError, within
from gem_eval.models.concurrency import AdaptiveLimit
from gem_eval.models.retry import Failure, MalformedReplyError, RetryPolicy, with_retries
from gem_eval.models.tokens import read_tokens

if TYPE_CHECKING:
    from gem_eval.records import TokenPrice  # records imports models (judge)


class ChatAPIModel(Model):
    """A model behind an OpenAI-style chat-completions API.

    Args:
        model: The model string sent to the API.
        api_base: Base URL of an OpenAI-compatible server (vLLM, SGLang, llama.cpp ...).
        api_key: The key; ``None`` takes the provider's environment variable.
        retry: Retries and the per-call timeout.
        concurrency: Calls in flight at first, and at most: what the run asked for. The
            limit backs off on 429s and regains this within seconds (see
            :class:`~gem_eval.models.concurrency.AdaptiveLimit`). ``None``: the model's
            ``default_concurrency``, growing up to ``max_concurrency``.
        max_concurrency: The ceiling when ``concurrency`` is not given.
        name: How results name the model (default: ``model``).
        price: What its tokens cost, as the user gave it: each reply's ``cost_usd``
            (over the provider's price, and for models that have none).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        concurrency: int | None = None,
        max_concurrency: int = 100,
        name: str | None = None,
        price: TokenPrice | None = None,
    ) -> None:
        self.model, self.api_base, self.api_key = model, api_base, api_key
        self.price = price
        self.name = name or model
        self.retry = retry or RetryPolicy()
        if concurrency is not None:
            self.limit = AdaptiveLimit(concurrency, maximum=concurrency)
        else:
            initial = self.default_concurrency
            self.limit = AdaptiveLimit(initial, maximum=max(initial, max_concurrency))
        policy = self.retry
        self.call_timeout = CallTimeout(
            policy.timeout_s, policy.timeout_floor_s, policy.timeout_multiple
        )
        # Calls sent before the first reply carry the client's cold start (litellm's import
        # takes seconds): they do not teach the timeout what a call takes.
        self._warm_at: float | None = None

    @abstractmethod
    async def _request(
        self, messages: list[Message], tools: list[ToolSchema] | None, config: GenerateConfig
    ) -> Any:
        """Send one chat-completions request; return the parsed response object."""

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        settings = config or GenerateConfig()
        started = time.monotonic()
        epoch = self.limit.epoch  # the limit's epoch when the last attempt started
        cuts = 0  # attempts of this call cut by the timeout: each retry gets twice the time

        async def attempt() -> ModelOutput:
            nonlocal epoch, cuts
            epoch = await self.limit.acquire()
            sent = time.monotonic()
            try:
                response = await within(
                    self._request(messages, tools, settings),
                    lambda: self.call_timeout.seconds(settings.max_tokens, cuts),
                )
            except CallTimeoutError:
                cuts += 1
                raise
            finally:
                self.limit.release()  # a retry waits its backoff without holding a slot
            output = self._read(response)
            if self.price is not None:
                usage = output.usage
                usage.cost_usd = self.price.cost_usd(usage.input_tokens, usage.output_tokens)
            answered = time.monotonic()
            if self._warm_at is None:
                self._warm_at = answered
            elif sent >= self._warm_at:
                self.call_timeout.observe(answered - sent, output.usage.output_tokens)
            self.limit.on_success()
            return output

        def on_failure(failure: Failure) -> None:
            if failure.rate_limited:
                self.limit.on_rate_limit(epoch)

        output, retries = await with_retries(attempt, self.retry, on_failure=on_failure)
        output.latency_s, output.retries = time.monotonic() - started, retries
        return output

    def _read(self, response: Any) -> ModelOutput:
        choices = getattr(response, "choices", None)
        if not choices:
            raise MalformedReplyError("the reply has no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise MalformedReplyError("the reply's choice has no message")
        calls = [
            ToolCall(
                id=c.id or f"call_{i}",
                name=c.function.name or "",
                arguments=c.function.arguments or "{}",
            )
            for i, c in enumerate(getattr(message, "tool_calls", None) or [])
        ]
        return ModelOutput(
            text=getattr(message, "content", None) or "",
            tool_calls=calls,
            finish_reason=getattr(choice, "finish_reason", None),
            usage=self._usage(response),
            model=self.name,
            tokens=read_tokens(response, choice),
        )

    def _usage(self, response: Any) -> Usage:
        usage = getattr(response, "usage", None)
        if usage is None:
            return Usage()
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        return Usage(
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cached_tokens=cached or 0,
            cost_usd=self._cost(response),
        )

    def _cost(self, response: Any) -> float | None:
        """Cost in USD when the provider's prices are known (see LiteLLMModel)."""
        return None
