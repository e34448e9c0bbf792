"""Tools the agent can call: the interface (real tools arrive with the sandbox layer)."""

from __future__ import annotations

from gem_eval.tools.base import Tool, ToolResult, check_arguments

__all__ = ["Tool", "ToolResult", "check_arguments"]
