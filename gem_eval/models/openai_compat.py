"""``OpenAICompatModel``: a direct client for OpenAI-compatible servers.

The fast path for vLLM, SGLang and llama.cpp servers, where RL rollouts need
throughput: the ``openai`` SDK alone costs less CPU per call than going through
litellm (see ``bench/harness_overhead.py``).
"""

from __future__ import annotations

from typing import Any

from gem_eval.errors import UserError
from gem_eval.models.base import GenerateConfig, Message, ToolSchema
from gem_eval.models.chat_api import ChatAPIModel


class OpenAICompatModel(ChatAPIModel):
    """A model served at ``api_base`` by an OpenAI-compatible server.

    See :class:`~gem_eval.models.chat_api.ChatAPIModel` for the arguments; ``model`` is
    the name the server knows the model by.
    """

    _client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise UserError("openai is not installed: pip install 'gem-eval[models]'") from exc
            self._client = openai.AsyncOpenAI(
                base_url=self.api_base,
                api_key=self.api_key or "EMPTY",
                max_retries=0,  # retries are ours
                timeout=self.retry.timeout_s,
            )
        return self._client

    async def _request(
        self, messages: list[Message], tools: list[ToolSchema] | None, config: GenerateConfig
    ) -> Any:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        args = config.sampling_args()
        extra = {k: args.pop(k) for k in list(args) if k not in _OPENAI_ARGS}
        kwargs.update(args)
        if extra:
            kwargs["extra_body"] = extra
        if tools:
            kwargs["tools"] = tools
        return await self._get_client().chat.completions.create(**kwargs)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


_OPENAI_ARGS = {"temperature", "top_p", "max_tokens", "seed", "reasoning_effort", "stop"}
