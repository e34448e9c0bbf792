"""``LiteLLMModel``: any provider litellm speaks (OpenAI, Anthropic, Gemini, vLLM ...)."""

from __future__ import annotations

import os
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
        return await litellm.acompletion(**kwargs)

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
