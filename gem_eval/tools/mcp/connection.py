"""``MCPConnection``: one live client session with one MCP server.

The SDK's transports and ``ClientSession`` are anyio context managers whose task groups
must be entered and exited by the same task. A run opens a connection in one task (an
episode's start, or the run's start for a shared server) and closes it in another, so
each connection is owned by a background task of its own: it enters the transport and
the session, initializes, lists the tools, signals that it is ready, waits to be told
to close, and exits everything in order. Calls from any task of the same event loop
go through the session meanwhile.

Leaving a stdio transport ends the server (the SDK closes its stdin, then kills its
process group); leaving the sandbox bridge kills the sandbox process.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator
from typing import IO, TYPE_CHECKING, Any

from gem_eval.errors import GemEvalError, SandboxError
from gem_eval.tools.mcp.config import ServerConfig
from gem_eval.tools.mcp.sandbox_transport import BridgeLog, sandbox_stdio

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client._transport import TransportStreams
    from mcp.types import CallToolResult
    from mcp.types import Tool as ServerTool

    from gem_eval.sandbox.base import Sandbox

_CLOSE_TIMEOUT_S = 10.0
"""How long a closing connection may take before its owner task is cancelled."""
_CALL_GRACE_S = 5.0
"""Extra time past a call's timeout before the caller stops waiting for the SDK."""
_SANDBOX_PROBE_S = 15.0


class ServerGoneError(GemEvalError):
    """The server is no longer reachable (it exited, crashed, or closed the connection)."""


class MCPConnection:
    """A client session with one MCP server, owned by a background task.

    Args:
        config: The server.
        sandbox: Where an ``in_sandbox`` server runs (``None`` otherwise).

    Attributes:
        server_info: ``{"name": ..., "version": ...}`` as the server announced them.
        tools: The server's tools, as listed after initializing.
    """

    def __init__(self, config: ServerConfig, sandbox: Sandbox | None = None) -> None:
        if config.in_sandbox and sandbox is None:
            raise GemEvalError(
                f"MCP server {config.name!r} runs in the sandbox, but none was given"
            )
        self.config = config
        self.sandbox = sandbox if config.in_sandbox else None
        self.server_info: dict[str, str] = {}
        self.tools: list[ServerTool] = []
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._failure: BaseException | None = None
        self._gone = False  # a call found the connection closed
        self._bridge = BridgeLog()
        self._stderr: IO[str] | None = None  # a local stdio server's stderr

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def alive(self) -> bool:
        """Started, and not closed, failed, or found gone by a call (see :meth:`ping`)."""
        return (
            self._session is not None
            and self._task is not None
            and not self._task.done()
            and not self._gone
        )

    async def ping(self, timeout_s: float = 10.0) -> bool:
        """Whether the server answers a ping now (a server that does not is marked gone)."""
        if self._session is None or not self.alive:
            return False
        try:
            await asyncio.wait_for(self._session.send_ping(), timeout_s)
        except Exception:
            self._gone = True
            return False
        return True

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start (or reach) the server, initialize, and list its tools.

        Raises:
            GemEvalError: The server could not be started or reached, or did not answer
                in ``connect_timeout_s``; the message names the server and says why.
            SandboxError: The sandbox failed while starting an ``in_sandbox`` server.
        """
        if self._task is not None:
            raise RuntimeError(f"MCP connection {self.name!r} was already started")
        self._task = asyncio.create_task(self._own(), name=f"mcp-server:{self.name}")
        try:
            await self._ready.wait()
        except BaseException:
            await self.aclose()
            raise
        if self._session is None:  # the owner failed before it was ready
            error = self._startup_error()
            await self.aclose()
            raise error

    async def aclose(self) -> None:
        """Close the session and stop the server; safe to call twice, and from any task."""
        task = self._task
        if task is not None and not task.done():
            self._closing.set()
            if not self._ready.is_set():
                task.cancel()  # still starting: stop waiting for it
            done, _ = await asyncio.wait({task}, timeout=_CLOSE_TIMEOUT_S)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=_CLOSE_TIMEOUT_S)
        if self._stderr is not None:
            self._stderr.close()

    async def _own(self) -> None:
        """The owner task: enter the transport and session, serve, exit in order."""
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(*streams))
                await asyncio.wait_for(self._handshake(session), self.config.connect_timeout_s)
                self._session = session
                self._ready.set()
                await self._closing.wait()
        except asyncio.CancelledError:
            if not self._closing.is_set():
                raise
        except Exception as exc:
            self._failure = exc
        finally:
            self._session = None
            self._ready.set()

    async def _handshake(self, session: ClientSession) -> None:
        from mcp.types import PaginatedRequestParams

        result = await session.initialize()
        info = result.server_info
        self.server_info = {"name": info.name, "version": info.version}
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            listing = await session.list_tools(params=params)
            self.tools.extend(listing.tools)
            cursor = listing.next_cursor
            if not cursor:
                return

    def _transport(self) -> contextlib.AbstractAsyncContextManager[TransportStreams]:
        config = self.config
        if config.url is not None:
            return _http_transport(config.url, config.headers)
        if self.sandbox is not None:
            return self._sandbox_transport(self.sandbox)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert config.command is not None
        params = StdioServerParameters(
            command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
        )
        # Closed in aclose: it outlives this call, for error messages.
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        return stdio_client(params, errlog=self._stderr)

    @contextlib.asynccontextmanager
    async def _sandbox_transport(self, sandbox: Sandbox) -> AsyncIterator[TransportStreams]:
        assert self.config.command is not None
        cmd = [self.config.command, *self.config.args]
        process = await sandbox.spawn(cmd, cwd=self.config.cwd, env=self.config.env or None)
        async with sandbox_stdio(process, self._bridge) as streams:
            yield streams

    # -- calls --------------------------------------------------------------------------

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout_s: float
    ) -> CallToolResult:
        """Call one of the server's tools.

        Raises:
            TimeoutError: No answer within ``timeout_s`` (the server is asked to cancel;
                the connection stays usable).
            ServerGoneError: The connection is closed or the server has gone.
            mcp.MCPError: The server answered with a protocol error.
        """
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        session = self._session
        if session is None or not self.alive:
            raise ServerGoneError(self.gone_message())
        if self.sandbox is not None:  # the agent's call runs in the sandbox's server
            self.sandbox.started += 1
        try:
            call = session.call_tool(name, arguments, read_timeout_seconds=timeout_s)
            return await asyncio.wait_for(call, timeout_s + _CALL_GRACE_S)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer in {timeout_s:g} s") from None
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise TimeoutError(f"no answer in {timeout_s:g} s") from None
            if exc.code == CONNECTION_CLOSED:
                self._gone = True
                raise ServerGoneError(self.gone_message()) from None
            raise

    def gone_message(self) -> str:
        """Why the server cannot be called, with the last of its output."""
        if self._task is None:
            why = "was never started"
        elif self._closing.is_set():
            why = "was closed"
        elif self._failure is not None:
            why = f"failed ({_describe(self._failure)})"
        elif self.config.url is not None:
            why = "closed the connection"
        else:
            why = "exited"
        return f"MCP server {self.name!r} {why}{self._output_tail()}"

    async def sandbox_failure(self) -> SandboxError | None:
        """For an ``in_sandbox`` server that has gone: a ``SandboxError`` when its sandbox
        failed (rather than the server alone), else ``None``."""
        if self.sandbox is None:
            return None
        if isinstance(self._bridge.error, SandboxError):
            return self._bridge.error
        try:
            result = await asyncio.wait_for(
                self.sandbox.exec(["true"], timeout=10), _SANDBOX_PROBE_S
            )
        except Exception as exc:
            why = _describe(exc)
            return SandboxError(f"the sandbox of MCP server {self.name!r} failed: {why}")
        if not result.ok:
            return SandboxError(
                f"the sandbox of MCP server {self.name!r} failed: `true` exited {result.exit_code}"
            )
        return None

    # -- messages -----------------------------------------------------------------------

    def _startup_error(self) -> BaseException:
        failure = self._failure
        leaf = _leaf(failure) if failure is not None else None
        if isinstance(leaf, SandboxError):
            return leaf
        if isinstance(self._bridge.error, SandboxError):
            return self._bridge.error
        config, name = self.config, self.name
        if isinstance(leaf, asyncio.TimeoutError | TimeoutError):
            why = f"did not answer within {config.connect_timeout_s:g} s of starting"
        elif isinstance(leaf, OSError) and config.url is None and self.sandbox is None:
            why = f"could not be started ({config.command!r}: {leaf.strerror or leaf})"
        elif config.url is not None and _is_connect_error(leaf):
            why = f"could not be reached at {config.url} ({_describe(leaf)})"
        elif _is_connection_closed(leaf):
            why = "exited during startup" if config.url is None else "closed the connection"
        else:
            why = f"failed to start ({_describe(leaf)})"
        return GemEvalError(f"MCP server {name!r} {why}{self._output_tail()}")

    def _output_tail(self, limit: int = 800) -> str:
        if self._stderr is None:
            text = self._bridge.tail(limit)
        else:
            try:
                self._stderr.seek(0, 2)
                size = self._stderr.tell()
                self._stderr.seek(max(0, size - 4 * limit))
                text = self._stderr.read()[-limit:]
            except (OSError, ValueError):  # closed
                text = ""
        text = text.strip()
        return f"; its last output:\n{text}" if text else ""


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[TransportStreams]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: reads hold SSE streams
    async with (
        httpx2.AsyncClient(headers=headers or None, timeout=timeout) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams


def _leaf(exc: BaseException | None) -> BaseException | None:
    """The first non-group exception inside (anyio wraps task failures in groups)."""
    while exc is not None:
        inner = getattr(exc, "exceptions", None)
        if not isinstance(inner, tuple | list) or not inner:
            return exc
        exc = inner[0]
    return exc


def _describe(exc: BaseException | None) -> str:
    exc = _leaf(exc)
    if exc is None:
        return "unknown error"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _is_connect_error(exc: BaseException | None) -> bool:
    return type(exc).__name__ in {"ConnectError", "ConnectTimeout"} or isinstance(
        exc, ConnectionError
    )


def _is_connection_closed(exc: BaseException | None) -> bool:
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED
