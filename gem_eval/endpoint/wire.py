"""The OpenAI Chat Completions wire format, as an agent speaks it to the run's endpoint.

A request body becomes the arguments of :meth:`gem_eval.models.base.Model.generate`
(messages and tools as they are: gem-eval's messages are OpenAI's; sampling settings
as a :class:`~gem_eval.models.base.GenerateConfig` over the run's own), and a
:class:`~gem_eval.models.base.ModelOutput` becomes a completion, whole or as the
server-sent events of a streamed one.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from gem_eval.models.base import GenerateConfig, Message, ModelOutput, ToolSchema

_SETTINGS = ("temperature", "top_p", "seed", "reasoning_effort", "stop")
_TRANSPORT = {"model", "messages", "tools", "stream", "stream_options", "n", "user"}
"""Request fields that are not generation settings (``n`` above 1 is refused)."""


class WireError(ValueError):
    """A request the endpoint cannot serve; ``str`` is the message for the agent."""


def read_request(
    body: Any, base: GenerateConfig
) -> tuple[list[Message], list[ToolSchema] | None, GenerateConfig, bool]:
    """``(messages, tools, config, stream)`` of a chat-completions request body.

    The run's settings (``base``: the task's generation settings and ``-M``) apply; a
    setting the agent sends overrides the run's (Qwen Code asks for its own
    ``max_tokens``). Fields gem-eval does not know (``tool_choice``, ``top_k``) pass
    through to the provider as extras.

    Raises:
        WireError: Not a JSON object with a list of messages, or ``n`` above 1.
    """
    if not isinstance(body, dict):
        raise WireError("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise WireError("'messages' must be a list of message objects")
    if body.get("n", 1) != 1:
        raise WireError("only one choice per request (n = 1) is served")
    tools = body.get("tools") or None
    if tools is not None and not isinstance(tools, list):
        raise WireError("'tools' must be a list")
    update: dict[str, Any] = {k: body[k] for k in _SETTINGS if body.get(k) is not None}
    tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if tokens is not None:
        update["max_tokens"] = tokens
    extra = {
        k: v
        for k, v in body.items()
        if k not in _TRANSPORT
        and k not in _SETTINGS
        and k not in ("max_tokens", "max_completion_tokens")
    }
    config = base.model_copy(update={**update, "extra": {**base.extra, **extra}})
    config = GenerateConfig.model_validate(config.model_dump())  # checks the agent's values
    return messages, tools, config, bool(body.get("stream"))


def completion(output: ModelOutput, model: str) -> dict[str, Any]:
    """A chat completion object for ``output``."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": _message(output),
                "finish_reason": _finish_reason(output),
            }
        ],
        "usage": _usage(output),
    }


def stream_events(output: ModelOutput, model: str, usage: bool) -> Iterator[bytes]:
    """The server-sent events of a streamed completion of ``output``: its role, its
    text, its tool calls, the finish reason, then (``usage``: when the request asked
    with ``stream_options.include_usage``) the usage, then ``[DONE]``."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def event(delta: dict[str, Any], finish: str | None = None, **more: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({**base, "choices": [choice], **more}).encode() + b"\n\n"

    yield event({"role": "assistant", "content": ""})
    if output.text:
        yield event({"content": output.text})
    for index, call in enumerate(output.tool_calls):
        function = {"name": call.name, "arguments": call.arguments}
        delta = {"index": index, "id": call.id, "type": "function", "function": function}
        yield event({"tool_calls": [delta]})
    yield event({}, _finish_reason(output))
    if usage:
        chunk = {**base, "choices": [], "usage": _usage(output)}
        yield b"data: " + json.dumps(chunk).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


def error_body(
    message: str, kind: str = "invalid_request_error", code: Any = None
) -> dict[str, Any]:
    """An OpenAI error object (what clients parse the message of)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _message(output: ModelOutput) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": output.text or None}
    if output.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in output.tool_calls
        ]
    elif message["content"] is None:
        message["content"] = ""
    return message


def _finish_reason(output: ModelOutput) -> str:
    if output.tool_calls:
        return "tool_calls"
    return output.finish_reason or "stop"


def _usage(output: ModelOutput) -> dict[str, int]:
    usage = output.usage
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
