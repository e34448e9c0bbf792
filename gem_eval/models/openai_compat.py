"""``OpenAICompatModel``: a direct client for OpenAI-compatible servers.

The fast path for vLLM, SGLang and llama.cpp servers, where RL rollouts need
throughput. It speaks the chat-completions wire format itself: the request is plain
JSON over one pooled connection (:class:`~gem_eval.models.chat_http.JSONClient`) and
the reply is read straight from the parsed JSON, with neither litellm nor the
``openai`` SDK in the call path (see ``bench/harness_overhead.py`` for what that saves).
"""

from __future__ import annotations

import json
from typing import Any

from gem_eval.errors import MissingAPIKeyError
from gem_eval.models.backends import OPENAI_API_BASE
from gem_eval.models.base import GenerateConfig, Message, ModelOutput, ToolCall, ToolSchema, Usage
from gem_eval.models.chat_api import ChatAPIModel
from gem_eval.models.chat_http import JSONClient
from gem_eval.models.retry import MalformedReplyError
from gem_eval.models.tokens import read_tokens


class OpenAICompatModel(ChatAPIModel):
    """A model served at ``api_base`` by an OpenAI-compatible server.

    See :class:`~gem_eval.models.chat_api.ChatAPIModel` for the arguments; ``model`` is
    the name the server knows the model by. Generation settings that are not OpenAI's
    (``-M top_k=20``) are sent as extra top-level fields, as vLLM and SGLang expect.
    """

    _client: JSONClient | None = None

    async def start(self) -> None:
        """Fail before any episode when OpenAI's own API is called without a key."""
        if (self.api_base or "").startswith(OPENAI_API_BASE) and not self.api_key:
            raise MissingAPIKeyError(
                f"model {self.name!r} needs OPENAI_API_KEY: set it in the environment"
            )

    def _get_client(self) -> JSONClient:
        if self._client is None:
            if self.api_base is None:
                raise ValueError("OpenAICompatModel needs api_base")
            self._client = JSONClient(self.api_base, self.api_key or "EMPTY")
        return self._client

    async def _request(
        self, messages: list[Message], tools: list[ToolSchema] | None, config: GenerateConfig
    ) -> Any:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        body.update(config.sampling_args())
        if "max_tokens" in body and (self.api_base or "").startswith(OPENAI_API_BASE):
            # OpenAI's API refuses max_tokens for its reasoning models (o-series, gpt-5)
            # and takes max_completion_tokens for every chat model.
            body["max_completion_tokens"] = body.pop("max_tokens")
        if tools:
            body["tools"] = tools
        return await self._get_client().post("/chat/completions", body, self.retry.timeout_s)

    def _read(self, response: Any) -> ModelOutput:
        """A :class:`ModelOutput` from the reply's JSON.

        Raises:
            MalformedReplyError: The JSON is not a chat completion with a message.
        """
        choices = response.get("choices") if isinstance(response, dict) else None
        if not choices or not isinstance(choices, list):
            raise MalformedReplyError("the reply has no choices")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise MalformedReplyError("the reply's choice has no message")
        calls = [_tool_call(i, c) for i, c in enumerate(message.get("tool_calls") or [])]
        content, reason = message.get("content"), choice.get("finish_reason")
        return ModelOutput(
            text=content if isinstance(content, str) else "",
            tool_calls=calls,
            finish_reason=reason if isinstance(reason, str) else None,
            usage=_usage(response.get("usage")),
            model=self.name,
            tokens=read_tokens(response, choice),
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _tool_call(index: int, call: Any) -> ToolCall:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise MalformedReplyError(f"tool call {index} of the reply has no function")
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments)  # some servers send an object, not its text
    return ToolCall(
        id=call.get("id") or f"call_{index}",
        name=function.get("name") or "",
        arguments=arguments or "{}",
    )


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        cached_tokens=cached or 0,
    )
