"""The tool interface: a name, a JSON schema, a text-protocol form and an async call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


class ToolResult(BaseModel):
    """What a tool call returned to the agent."""

    output: str
    is_error: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class Tool(ABC):
    """A tool offered to the agent.

    Attributes:
        name: The function name the model calls.
        description: One or two sentences for the model.
        parameters: JSON schema of the arguments (an object schema).
        text_tag: For the text protocol: ``<TAG>body</TAG>`` calls this tool with
            ``{text_argument: body}`` (GEM's ``<python>...</python>`` style). ``None``
            means the tool is called only as ``<tool_call>{json}</tool_call>``.
        text_argument: The argument the body of ``<TAG>`` fills.
        needs_sandbox: True when ``call`` runs things in the episode's sandbox (the
            executor then gives the episode one).

    A tool instance serves one episode: it may keep state between calls (a live
    interpreter) and releases it in :meth:`aclose`.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    text_tag: ClassVar[str | None] = None
    text_argument: ClassVar[str | None] = None
    needs_sandbox: ClassVar[bool] = False

    @abstractmethod
    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        """Run the tool with arguments already checked against ``parameters``.

        Raises:
            SandboxError: The sandbox failed; the episode ends as ``infra_error``.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what the tool holds for its episode (processes, connections)."""

    def attachments(self) -> dict[str, str]:
        """Files this tool made for its episode (name -> text, e.g. a session's
        recording), kept with the episode's record; read before :meth:`aclose`."""
        return {}

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def check_arguments(schema: dict[str, Any], args: Any) -> str | None:
    """Check ``args`` against an object schema's ``required`` keys and property types.

    Returns an error message for the model, or ``None`` when the arguments fit.
    (Deliberately small: the checks a model's mistakes actually trip.)
    """
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    properties: dict[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in args]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    if schema.get("additionalProperties") is False:
        unknown = [k for k in args if k not in properties]
        if unknown:
            return f"unknown argument(s): {', '.join(unknown)}"
    for key, value in args.items():
        wanted = properties.get(key, {}).get("type")
        if wanted is None:
            continue
        names = wanted if isinstance(wanted, list) else [wanted]
        types = tuple(t for n in names for t in _JSON_TYPES.get(n, (object,)))
        is_bool_as_number = isinstance(value, bool) and "boolean" not in names
        if not isinstance(value, types) or is_bool_as_number:
            return f"argument {key!r} must be of type {'/'.join(names)}"
    return None
