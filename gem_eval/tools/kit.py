"""Tool kits: how a task's ``tools:`` entries become live tools for an episode.

A task lists tools by name, each with optional settings::

    tools:
      - python
      - {name: search, corpus: tasks/data/search/corpus.jsonl, k: 3}
      - {name: mcp, servers: [{name: fs, command: npx, args: [...]}]}

Each entry names a :class:`ToolKit`. A kit is built once per run from the entry's
settings (bad settings fail before the run, as one line). For each episode it is opened
with that episode's sandbox, returning the tools it offers (one for ``python``, one per
server tool for ``mcp``), and released after it; ``aclose`` ends the run. What lives for
an episode (an interpreter, a per-episode MCP server) dies in ``release``; what a kit
shares across the run (an index, a shared MCP server) dies in ``aclose``.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from gem_eval.errors import UserError, did_you_mean

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox
    from gem_eval.tools.base import Tool

KITS: dict[str, str] = {
    "python": "gem_eval.tools.python:PythonKit",
    "bash": "gem_eval.tools.bash:BashKit",
    "terminal": "gem_eval.tools.terminal:TerminalKit",
    "search": "gem_eval.tools.search:SearchKit",
    "mcp": "gem_eval.tools.mcp:MCPKit",
}
"""Tool kit classes by the name tasks use, as ``module:Class`` (imported when used)."""


class ToolKit(ABC):
    """Makes the tools of one ``tools:`` entry.

    Subclasses take the entry's settings as keyword arguments and raise ``UserError``
    (or ``TypeError``/``ValueError``, reported as one line) for bad ones.

    Attributes:
        needs_sandbox: The tools run inside the episode's sandbox.
    """

    @property
    def needs_sandbox(self) -> bool:
        """The tools run inside the episode's sandbox (a class attribute in most kits)."""
        return False

    @abstractmethod
    async def open(self, sandbox: Sandbox | None) -> list[Tool]:
        """The tools for an episode (``sandbox`` is ``None`` unless ``needs_sandbox``)."""

    async def release(self, tools: list[Tool]) -> None:
        """End an episode: release what ``open`` started for it (by default, close each
        tool)."""
        for tool in tools:
            await tool.aclose()

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """End the run: release what the kit shares across episodes."""

    def describe(self) -> dict[str, Any]:
        """What the run manifest records (e.g. MCP server names and versions)."""
        return {}


class SingleToolKit(ToolKit):
    """A kit offering one tool made per episode: ``tool_class(**settings)``."""

    tool_class: ClassVar[type[Tool]]

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.tool_class(**settings)  # check the settings now, not mid-run

    async def open(self, sandbox: Sandbox | None) -> list[Tool]:
        return [self.tool_class(**self.settings)]


def kit_class(name: str) -> type[ToolKit]:
    """The kit class registered as ``name``; :class:`UserError` for an unknown name."""
    try:
        target = KITS[name]
    except KeyError:
        raise UserError(
            f"unknown tool {name!r} (tools: {', '.join(KITS)}).{did_you_mean(name, KITS)}"
        ) from None
    module, _, attr = target.partition(":")
    cls: type[ToolKit] = getattr(importlib.import_module(module), attr)
    return cls


def build_kit(name: str, settings: dict[str, Any]) -> ToolKit:
    """A kit for one ``tools:`` entry, its settings checked."""
    cls = kit_class(name)
    try:
        return cls(**settings)
    except (TypeError, ValueError) as exc:
        raise UserError(f"tool {name!r}: {exc}") from None
