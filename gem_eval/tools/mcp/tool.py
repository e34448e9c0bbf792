"""``MCPTool`` (one tool of an MCP server) and ``MCPKit`` (the ``mcp`` entry of a task).

A task writes::

    tools:
      - name: mcp
        servers:
          - {name: notes, command: python, args: [srv.py]}
          - {name: web, url: "http://127.0.0.1:8000/mcp"}
        shared: false   # true: start the servers once and share them across the run
        timeout_s: 30   # per tool call (a server's own timeout_s wins)
        prefix: null    # tool names: null = prefix clashing names only, true = all, false = none

Every tool a server lists becomes one :class:`MCPTool`, with the server's description and
input schema. With ``prefix`` left unset a tool keeps its own name unless two servers
offer the same name; then those tools are called ``server__tool``. Names are made fit
for function calling (letters, digits, ``_`` and ``-``, at most 64 characters).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from gem_eval.errors import GemEvalError, UserError
from gem_eval.sandbox.base import DEFAULT_OUTPUT_LIMIT, cap_text
from gem_eval.tools.base import Tool, ToolResult
from gem_eval.tools.kit import ToolKit
from gem_eval.tools.mcp.config import parse_servers
from gem_eval.tools.mcp.connection import MCPConnection, ServerGoneError

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as ServerTool

    from gem_eval.sandbox.base import Sandbox

_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")


class MCPTool(Tool):
    """One tool of a connected MCP server.

    Args:
        connection: The live connection to the server (owned by the kit).
        spec: The tool as the server listed it.
        name: The name the model calls it by.
        timeout_s: Seconds a call may take.
        output_limit: Bytes of output kept per call.
    """

    def __init__(
        self,
        connection: MCPConnection,
        spec: ServerTool,
        name: str,
        timeout_s: float,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
    ) -> None:
        self.connection = connection
        self.remote_name = spec.name
        self.name = name
        self.description = (
            spec.description or spec.title or f"{spec.name}, a tool of MCP server {connection.name}"
        )
        self.parameters = {"type": "object", **spec.input_schema}
        self.timeout_s = timeout_s
        self.output_limit = output_limit

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        """Call the server's tool; failures of every kind come back as error results.

        Raises:
            SandboxError: The server ran in the sandbox, and the sandbox failed.
        """
        from mcp import MCPError

        meta: dict[str, Any] = {"server": self.connection.name, "tool": self.remote_name}
        try:
            result = await self.connection.call_tool(self.remote_name, args, self.timeout_s)
        except TimeoutError:
            message = f"Error: {self.name} did not finish within {self.timeout_s:g} s"
            return ToolResult(output=message, is_error=True, metadata={**meta, "timeout": True})
        except ServerGoneError as exc:
            failure = await self.connection.sandbox_failure()
            if failure is not None:
                raise failure from None
            return ToolResult(output=f"Error: {exc}", is_error=True, metadata=meta)
        except MCPError as exc:
            message = f"Error: MCP server {self.connection.name!r} answered: {exc.error.message}"
            return ToolResult(output=message, is_error=True, metadata={**meta, "code": exc.code})
        except Exception as exc:  # an SDK-side failure (e.g. a result that breaks its schema)
            message = f"Error: the call failed: {type(exc).__name__}: {exc}"
            return ToolResult(output=message, is_error=True, metadata=meta)
        text = render(result)
        if result.is_error and not text.lower().startswith("error"):
            text = f"Error: {text}" if text else f"Error: {self.name} failed"
        return ToolResult(
            output=cap_text(text.encode(), self.output_limit),
            is_error=result.is_error,
            metadata=meta,
        )


def render(result: CallToolResult) -> str:
    """A tool result as text: text as it is, other content summarised, structured content
    as JSON when there is nothing else."""
    from mcp.types import (
        AudioContent,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}]")
        elif isinstance(block, ResourceLink):
            mime = f" ({block.mime_type})" if block.mime_type else ""
            parts.append(f"[resource link: {block.uri}{mime}]")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f"[resource: {resource.uri}]\n{resource.text}")
            else:
                parts.append(f"[resource: {resource.uri} ({resource.mime_type or 'binary'})]")
        else:  # a content type newer than this code
            parts.append(f"[{getattr(block, 'type', 'content')}]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


class MCPKit(ToolKit):
    """The tools of one or more MCP servers.

    Args:
        servers: The servers (see :class:`~gem_eval.tools.mcp.config.ServerConfig`).
        shared: Start (or connect to) the servers once, at the first episode, and share
            them across the run's episodes until :meth:`aclose` (a shared server found
            dead is started again at the next episode); otherwise every episode gets
            servers of its own, stopped by :meth:`release`. ``in_sandbox`` servers cannot
            be shared.
        timeout_s: Seconds a tool call may take, unless a server sets its own.
        prefix: Name tools ``server__tool``: ``True`` for all, ``False`` for none, ``None``
            for those whose name another server also uses.
        output_limit: Bytes of output kept per call.

    Raises:
        ValueError: Bad settings (one line).
    """

    def __init__(
        self,
        servers: Any = None,
        shared: bool = False,
        timeout_s: float = 30.0,
        prefix: bool | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
    ) -> None:
        self.servers = parse_servers(servers)
        for setting, value in (("shared", shared), ("prefix", prefix)):
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"{setting} must be true or false, not {value!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
            raise ValueError(f"timeout_s must be a positive number, not {timeout_s!r}")
        if isinstance(output_limit, bool) or not isinstance(output_limit, int) or output_limit < 1:
            raise ValueError(
                f"output_limit must be a positive number of bytes, not {output_limit!r}"
            )
        if shared and any(s.in_sandbox for s in self.servers):
            raise ValueError("in_sandbox servers live with an episode's sandbox: not shared")
        self.shared = shared
        self.timeout_s = float(timeout_s)
        self.prefix = prefix
        self.output_limit = output_limit
        self._shared_tools: list[MCPTool] | None = None
        self._shared_lock = asyncio.Lock()
        self._live: set[MCPConnection] = set()
        self._seen: dict[str, dict[str, Any]] = {}

    @property
    def needs_sandbox(self) -> bool:
        """True when a server runs in the episode's sandbox."""
        return any(s.in_sandbox for s in self.servers)

    async def open(self, sandbox: Sandbox | None) -> list[Tool]:
        """Start (or reach) the servers and return their tools.

        Raises:
            GemEvalError: A server could not be started or reached (named in the message).
            UserError: A server lacks a tool named in its ``tools`` list.
            SandboxError: The sandbox failed while starting a server in it.
        """
        if self.shared:
            async with self._shared_lock:
                tools = self._shared_tools or []
                connections = {t.connection for t in tools}
                answers = await asyncio.gather(*(c.ping() for c in connections))
                if self._shared_tools is None or not all(answers):
                    # First episode, or a shared server died: (re)start what is not alive.
                    alive = {c.name: c for c in connections if c.alive}
                    await self._close(connections - set(alive.values()))
                    tools = self._shared_tools = await self._connect(None, alive)
                return list(tools)
        if self.needs_sandbox and sandbox is None:
            raise GemEvalError("the mcp tools need a sandbox for their in_sandbox servers")
        return list(await self._connect(sandbox))

    async def release(self, tools: list[Tool]) -> None:
        """Stop the episode's servers (shared ones keep running until :meth:`aclose`)."""
        if self.shared:
            return
        connections = {t.connection for t in tools if isinstance(t, MCPTool)}
        await self._close(connections)

    async def aclose(self) -> None:
        """Stop every server still running, shared or not."""
        self._shared_tools = None
        await self._close(set(self._live))

    def describe(self) -> dict[str, Any]:
        """Each server's transport and, once connected, its name, version and tools."""
        servers = []
        for config in self.servers:
            entry: dict[str, Any] = {"name": config.name, "transport": config.transport}
            if config.in_sandbox:
                entry["in_sandbox"] = True
            entry.update(self._seen.get(config.name, {}))
            servers.append(entry)
        return {"servers": servers, "shared": self.shared}

    async def _connect(
        self, sandbox: Sandbox | None, running: dict[str, MCPConnection] | None = None
    ) -> list[MCPTool]:
        """Start every server not in ``running`` (by name); the tools of all of them."""
        running = running or {}
        connections, started = [], []
        for config in self.servers:
            connection = running.get(config.name)
            if connection is None:
                connection = MCPConnection(config, sandbox if config.in_sandbox else None)
                started.append(connection)
            connections.append(connection)
        self._live.update(started)
        results = await asyncio.gather(*(c.start() for c in started), return_exceptions=True)
        try:
            for result in results:
                if isinstance(result, BaseException):
                    raise result
            tools = self._make_tools(connections)
        except BaseException:
            await self._close(set(started))
            raise
        # A server left with no tools offers the episode nothing: stop it now.
        await self._close({c for c in started if not any(t.connection is c for t in tools)})
        return tools

    def _make_tools(self, connections: list[MCPConnection]) -> list[MCPTool]:
        offered: list[tuple[MCPConnection, ServerTool]] = []
        for connection in connections:
            config = connection.config
            by_name = {t.name: t for t in connection.tools}
            wanted = config.tools if config.tools is not None else list(by_name)
            missing = [n for n in wanted if n not in by_name]
            if missing:
                raise UserError(
                    f"MCP server {config.name!r} has no tool {missing[0]!r} "
                    f"(its tools: {', '.join(by_name) or 'none'})"
                )
            offered += [(connection, by_name[n]) for n in wanted]
            self._seen[config.name] = {"server": dict(connection.server_info), "tools": wanted}
        counts = Counter(spec.name for _, spec in offered)
        tools: list[MCPTool] = []
        for connection, spec in offered:
            clash = counts[spec.name] > 1
            prefixed = self.prefix or (self.prefix is None and clash)
            name = f"{connection.name}__{spec.name}" if prefixed else spec.name
            timeout = connection.config.timeout_s or self.timeout_s
            name = _NOT_A_NAME.sub("_", name)[:64]
            tools.append(MCPTool(connection, spec, name, timeout, self.output_limit))
        names = Counter(t.name for t in tools)
        doubled = [n for n, k in names.items() if k > 1]
        if doubled:
            raise UserError(f"two MCP tools would both be called {doubled[0]!r}: set prefix: true")
        return tools

    async def _close(self, connections: set[MCPConnection]) -> None:
        self._live.difference_update(connections)
        await asyncio.gather(*(c.aclose() for c in connections), return_exceptions=True)
