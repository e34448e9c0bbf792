"""``LiteLLMModel``: any provider litellm speaks (OpenAI, Anthropic, Gemini, vLLM ...)."""

from __future__ import annotations

import asyncio
import inspect
import os
from types import CodeType
from typing import Any

from gem_eval.errors import MissingAPIKeyError, UserError
from gem_eval.models.base import GenerateConfig, Message, ToolSchema
from gem_eval.models.chat_api import ChatAPIModel

_litellm: Any = None


def import_litellm() -> Any:
    """Import litellm once, offline (no cost-map download) and quiet."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            import litellm
        except ImportError as exc:
            raise UserError(
                "litellm is not installed: pip install gem-eval (it depends on it)"
            ) from exc
        litellm.suppress_debug_info = True
        _litellm = litellm
    return _litellm


class LiteLLMModel(ChatAPIModel):
    """A model string as litellm spells it: ``openai/gpt-5``, ``anthropic/...``,
    ``gemini/...``, ``hosted_vllm/...``, ``ollama/...``.

    With ``api_base`` (a local OpenAI-compatible server) no API key is needed.
    See :class:`~gem_eval.models.chat_api.ChatAPIModel` for the arguments.
    """

    async def start(self) -> None:
        """Import litellm (seconds) before the first episode rather than during its first
        call; fail before any episode when the provider's API key is missing."""
        litellm = import_litellm()
        if self.api_base is not None or self.api_key is not None:
            return
        try:
            check = litellm.validate_environment(model=self.model)
        except Exception:  # an unknown provider: let the first call say what is wrong
            return
        missing = check.get("missing_keys") or []
        if not check.get("keys_in_environment", True) and missing:
            raise MissingAPIKeyError(
                f"model {self.model!r} needs {' and '.join(missing)}: set it in the environment"
            )

    async def _request(
        self, messages: list[Message], tools: list[ToolSchema] | None, config: GenerateConfig
    ) -> Any:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "timeout": self.retry.timeout_s,
            "num_retries": 0,  # retries are ours: counted, and only of the failed call
            **config.sampling_args(),
        }
        if tools:
            kwargs["tools"] = tools
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
            kwargs["api_key"] = self.api_key or "EMPTY"
        elif self.api_key is not None:
            kwargs["api_key"] = self.api_key
        call = asyncio.ensure_future(litellm.acompletion(**kwargs))
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:  # cut (the per-call timeout, the episode's limit)
            try:
                await _past_thread_step(call)
            finally:  # cancelled again meanwhile: cut the call all the same
                call.cancel()
            await asyncio.wait({call})
            if not call.cancelled():
                call.exception()  # retrieved: a failure while unwinding is no news
            raise

    def _cost(self, response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict) and "response_cost" in hidden:
            # litellm priced the reply already (None: an unknown price); pricing it again
            # costs ~1.7 ms of CPU a call, raising for every local model.
            cost = hidden["response_cost"]
        else:
            try:
                cost = import_litellm().completion_cost(completion_response=response)
            except Exception:  # unknown price (local models): say nothing rather than 0
                return None
        return float(cost) if cost else None


async def _past_thread_step(call: asyncio.Future[Any]) -> None:
    """Wait until ``call`` (``litellm.acompletion``) no longer waits for its worker thread.

    litellm builds a request in a thread (``completion()``), which returns the coroutine
    that sends it; ``acompletion`` awaits that coroutine once the thread is done. A call
    cancelled while the thread runs drops the coroutine unawaited ("coroutine
    'OpenAIChatCompletion.acompletion' was never awaited"). Waiting for the thread loses
    nothing (cancelling cannot stop it): the request coroutine is then started, and the
    cancel closes it (and its connection) as it closes any call in flight.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + _THREAD_STEP_WAIT_S
    while not call.done() and _in_thread_step(call) and loop.time() < give_up:
        await asyncio.sleep(_THREAD_STEP_POLL_S)


_THREAD_STEP_POLL_S = 0.002
_THREAD_STEP_WAIT_S = 5.0
"""Longer than building a request ever takes: past it, the call is cancelled regardless."""


def _in_thread_step(call: asyncio.Future[Any]) -> bool:
    """Whether litellm's ``acompletion`` in ``call`` waits for its worker thread: that
    frame awaits a future directly (its other awaits are coroutines)."""
    get_coro = getattr(call, "get_coro", None)
    awaited: Any = get_coro() if get_coro is not None else None
    code = _acompletion_code()
    while inspect.iscoroutine(awaited):
        owner, awaited = awaited, awaited.cr_await
        if owner.cr_code is code:
            return awaited is not None and not inspect.iscoroutine(awaited)
    return False


_ACOMPLETION_CODE: CodeType | None = None


def _acompletion_code() -> CodeType | None:
    """The code of litellm's own ``acompletion`` (under its decorators)."""
    global _ACOMPLETION_CODE
    if _ACOMPLETION_CODE is None:
        function = inspect.unwrap(import_litellm().acompletion)
        _ACOMPLETION_CODE = getattr(function, "__code__", None)
    return _ACOMPLETION_CODE
