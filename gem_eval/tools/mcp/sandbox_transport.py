"""``sandbox_stdio``: the MCP stdio transport over a process running in a sandbox.

The SDK's ``stdio_client`` starts a local subprocess; a server inside the episode's
sandbox is a :class:`~gem_eval.sandbox.base.SandboxProcess` instead. This bridge gives
the SDK's ``ClientSession`` the same pair of memory streams: one task reads the process's
output, splits it into lines and parses each as a JSON-RPC message; another writes each
outgoing message as one line of JSON.

A sandbox process's stderr is merged into its stdout, so lines that are not JSON-RPC
(log output, a traceback) are set aside in :attr:`BridgeLog.noise` for error messages
rather than failing the session. (A log line written in the middle of a long JSON
message would corrupt that message; servers write their logs between messages.)
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gem_eval.sandbox.base import SandboxProcess

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams
    from mcp.shared.message import SessionMessage

_NOISE_LINES = 40
"""Non-protocol lines kept (the last ones) to explain a server that died."""
_MAX_ATTEMPTS = 4
"""Start positions tried when a line does not parse as JSON-RPC from its start."""


class BridgeLog:
    """What the bridge saw besides protocol traffic.

    Attributes:
        noise: The last lines of output that were not JSON-RPC messages.
        error: The exception that ended reading or writing (e.g. a ``SandboxError``),
            ``None`` after a plain end of output.
        ended: The process's output has ended (it exited, or was killed).
    """

    def __init__(self) -> None:
        self.noise: deque[str] = deque(maxlen=_NOISE_LINES)
        self.error: BaseException | None = None
        self.ended = False

    def tail(self, limit: int = 1500) -> str:
        """The last non-protocol output, at most ``limit`` characters."""
        return "\n".join(self.noise)[-limit:]


@contextlib.asynccontextmanager
async def sandbox_stdio(
    process: SandboxProcess, log: BridgeLog | None = None
) -> AsyncIterator[TransportStreams]:
    """Talk MCP over ``process``'s stdin and stdout; kill it on exit.

    Args:
        process: The server, already started (``sandbox.spawn``).
        log: Collects non-protocol output and the error that ended the bridge.

    Yields:
        The ``(read_stream, write_stream)`` pair a ``ClientSession`` takes.
    """
    import anyio
    from mcp.shared.message import SessionMessage

    log = log or BridgeLog()
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def pump_output() -> None:
        buffer = b""
        async with read_send:
            while True:
                try:
                    chunk = await process.read()
                except Exception as exc:  # the sandbox (or its process) failed
                    log.error = exc
                    break
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = _parse(line, log)
                    if message is not None:
                        try:
                            await read_send.send(message)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return  # the session has gone
            if buffer.strip():
                _parse(buffer, log)
            log.ended = True

    async def pump_input() -> None:
        async with write_receive:
            async for message in write_receive:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await process.write(line.encode() + b"\n")
                except Exception as exc:  # the process is gone: end the session's reads too
                    log.error = log.error or exc
                    await read_send.aclose()
                    return

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(pump_output)
        tasks.start_soon(pump_input)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                for stream in (read_stream, write_stream):
                    await stream.aclose()
                with anyio.move_on_after(10), contextlib.suppress(Exception):
                    await process.kill()
            tasks.cancel_scope.cancel()


def _parse(line: bytes, log: BridgeLog) -> SessionMessage | None:
    """A JSON-RPC message, or ``None`` (the line is kept as noise)."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    text = line.decode("utf-8", errors="replace").strip()
    start = text.find("{")
    # A log line without a newline may run into a message: try from the first few braces.
    for _ in range(_MAX_ATTEMPTS):
        if start < 0:
            break
        try:
            message = jsonrpc_message_adapter.validate_json(text[start:], by_name=False)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if start > 0:
            log.noise.append(text[:start])
        return SessionMessage(message)
    if text:
        log.noise.append(text)
    return None
