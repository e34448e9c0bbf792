"""Reading tool calls from model output, in both modes, and running them safely.

* ``native``: the model returns OpenAI ``tool_calls`` (name + JSON argument text).
* ``text``: for models without function calling, calls are written in the reply, in
  GEM's style: ``<tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>``,
  or ``<python>print(1)</python>`` for a tool that declares the ``python`` tag.

Whatever the model writes, a malformed call (bad JSON, unknown tool, wrong argument
types) becomes an error result that goes back to the model; nothing here raises on
model output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gem_eval.errors import SandboxError
from gem_eval.models.base import ToolCall
from gem_eval.sandbox.base import Sandbox
from gem_eval.tools.base import Tool, ToolResult, check_arguments

TOOL_MODES = ("native", "text")
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


@dataclass
class ParsedCall:
    """A tool call read from the model: its arguments, or why they could not be read."""

    id: str
    name: str
    raw: str
    arguments: dict[str, Any] | None = None
    error: str | None = None


def from_native(call: ToolCall) -> ParsedCall:
    """Read the JSON arguments of a native tool call."""
    parsed = ParsedCall(id=call.id, name=call.name, raw=call.arguments)
    try:
        parsed.arguments = json.loads(call.arguments or "{}")
    except (json.JSONDecodeError, RecursionError) as exc:
        parsed.error = f"arguments are not valid JSON ({exc})"
    return parsed


def from_text(text: str, tools: Sequence[Tool]) -> list[ParsedCall]:
    """Every tool call written in ``text``, in the order written."""
    found: list[tuple[int, ParsedCall]] = []
    for n, match in enumerate(_TOOL_CALL.finditer(text)):
        found.append((match.start(), _read_tool_call_json(match.group(1), f"call_{n}")))
    for tool in tools:
        if tool.text_tag and tool.text_argument:
            tag = re.escape(tool.text_tag)
            for match in re.finditer(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL):
                body = match.group(1).strip()
                call = ParsedCall(id=f"{tool.text_tag}_{match.start()}", name=tool.name, raw=body)
                call.arguments = {tool.text_argument: body}
                found.append((match.start(), call))
    found.sort(key=lambda pair: pair[0])
    return [call for _, call in found]


def _read_tool_call_json(body: str, call_id: str) -> ParsedCall:
    call = ParsedCall(id=call_id, name="", raw=body)
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, RecursionError) as exc:
        call.error = f'write {{"name": ..., "arguments": {{...}}}} as valid JSON ({exc})'
        return call
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        call.error = 'a tool call needs a "name" (string) and "arguments" (object)'
        return call
    call.name = data["name"]
    arguments = data.get("arguments", {})
    if isinstance(arguments, str):  # some models double-encode
        try:
            arguments = json.loads(arguments)
        except (json.JSONDecodeError, RecursionError):
            call.error = '"arguments" must be a JSON object'
            return call
    call.arguments = arguments
    return call


async def execute(
    call: ParsedCall, tools: Sequence[Tool], sandbox: Sandbox | None = None
) -> ToolResult:
    """Run a parsed call in ``sandbox``; every kind of mistake comes back as an error
    result.

    A tool that raises is reported as an error result too (its message is for the
    model); the exception's type is kept in ``metadata["exception"]``. A
    :class:`SandboxError` propagates (the sandbox failed, not the model), and so does a
    tool whose ``call`` cannot take ``(arguments, sandbox)``: a bug in gem-eval or in
    the tool, which must not pass for the model's mistake.
    """
    if call.error is not None:
        return ToolResult(output=f"Error: {call.error}", is_error=True)
    by_name = {tool.name: tool for tool in tools}
    tool = by_name.get(call.name)
    if tool is None:
        names = ", ".join(by_name) or "none"
        return ToolResult(
            output=f"Error: unknown tool {call.name!r} (tools: {names})", is_error=True
        )
    problem = check_arguments(tool.parameters, call.arguments)
    if problem is not None:
        return ToolResult(output=f"Error: {problem}", is_error=True)
    assert call.arguments is not None  # check_arguments accepted it
    pending = tool.call(call.arguments, sandbox)  # a wrong signature raises here, outside
    try:
        return await pending
    except SandboxError:
        raise
    except Exception as exc:
        return ToolResult(
            output=f"Error: the tool failed: {type(exc).__name__}: {exc}",
            is_error=True,
            metadata={"exception": type(exc).__name__},
        )


def text_protocol_prompt(tools: Sequence[Tool]) -> str:
    """Instructions that teach a model without function calling to call ``tools``."""
    lines = [
        "You can call tools. To call one, write on its own:",
        '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>',
    ]
    for tool in tools:
        if tool.text_tag:
            lines.append(f"or, for {tool.name}: <{tool.text_tag}>...</{tool.text_tag}>")
    lines.append(
        "Each result comes back as <tool_response>...</tool_response>. "
        "When you are done with tools, give your answer without a tool call."
    )
    lines.append("Tools:")
    for tool in tools:
        lines.append(json.dumps(tool.schema()["function"]))
    return "\n".join(lines)


def text_tool_response(name: str, result: ToolResult) -> str:
    """How a tool result is shown to a model in the text protocol."""
    return f'<tool_response name="{name}">\n{result.output}\n</tool_response>'
