"""``ScriptedModel``: a model that answers from a script, for tests and examples."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolCall, ToolSchema

Reply = str | ModelOutput | BaseException
ReplyFn = Callable[[list[Message]], Reply]


def tool_call(name: str, arguments: dict[str, Any] | str, id: str | None = None) -> ToolCall:
    """A :class:`ToolCall` from a dict of arguments (or raw argument text)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id=id or f"call_{name}", name=name, arguments=text)


class ScriptedModel(Model):
    """Answers each call with the next scripted reply, or with a function of the messages.

    A reply is a string (the text), a :class:`ModelOutput` (text, tool calls, usage), or
    an exception, which is raised. When a list runs out, the last reply repeats.

    Args:
        replies: The replies in order, or a function from the messages to a reply.
        name: The model's name in results.
    """

    def __init__(self, replies: Iterable[Reply] | ReplyFn, name: str = "scripted") -> None:
        self.name = name
        self.calls: list[list[Message]] = []
        if callable(replies):
            self._fn: ReplyFn | None = replies
            self._replies: list[Reply] = []
        else:
            self._fn = None
            self._replies = list(replies)
            if not self._replies:
                raise ValueError("ScriptedModel needs at least one reply")

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        self.calls.append([dict(m) for m in messages])
        if self._fn is not None:
            reply = self._fn(messages)
        else:
            index = min(len(self.calls) - 1, len(self._replies) - 1)
            reply = self._replies[index]
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            return ModelOutput(text=reply, finish_reason="stop", model=self.name)
        return reply.model_copy(update={"model": reply.model or self.name})
