"""``DockerProcess``: a long-lived process in a container, over the exec socket.

The process is started with ``docker exec`` (stdin attached, no TTY). Docker multiplexes
its stdout and stderr on one socket in frames (an 8-byte header: stream, three zero
bytes, big-endian length); :meth:`DockerProcess.read` strips the headers and merges the
streams. The command is wrapped so it first prints its PID inside the container: the
process is the leader of its own process group there, which is what :meth:`kill`
signals (an exec has no kill endpoint in Docker's API).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import TYPE_CHECKING, Any

from gem_eval.errors import SandboxError
from gem_eval.sandbox import docker_client
from gem_eval.sandbox.base import SandboxProcess

if TYPE_CHECKING:
    from gem_eval.sandbox.docker import DockerSandbox

_HEADER = struct.Struct(">BxxxL")
_PID_PREFIX = b"GEM_EVAL_PID "
_WRAPPER = 'echo "GEM_EVAL_PID $$"; exec "$@"'
_START_TIMEOUT_S = 60.0


class DockerProcess(SandboxProcess):
    """A process in a container; made by :meth:`DockerSandbox.spawn`."""

    def __init__(self, sandbox: DockerSandbox, sock: socket.socket, keepalive: Any) -> None:
        self.sandbox = sandbox
        self.sock = sock
        self._keepalive = keepalive  # the HTTP response owning the socket
        self._frames = bytearray()  # raw bytes not yet split into frames
        self._ready = bytearray()  # payload bytes not yet returned by read()
        self._eof = False
        self.pid: int | None = None

    @classmethod
    async def start(
        cls,
        sandbox: DockerSandbox,
        container_id: str,
        cmd: list[str],
        *,
        user: str,
        cwd: str,
        env: dict[str, str] | None,
    ) -> DockerProcess:
        api = docker_client.client().api
        what = f"starting {cmd[0]} in a container"
        created = await docker_client.call(
            what,
            api.exec_create,
            container_id,
            ["sh", "-c", _WRAPPER, "sh", *cmd],
            stdin=True,
            stdout=True,
            stderr=True,
            tty=False,
            user=user,
            workdir=cwd,
            environment=env,
        )
        io_sock = await docker_client.call(what, api.exec_start, created["Id"], socket=True)
        raw: socket.socket = io_sock._sock
        raw.setblocking(False)
        process = cls(sandbox, raw, io_sock)
        process._frames += _buffered(io_sock)
        try:
            line = await asyncio.wait_for(process._read_line(), _START_TIMEOUT_S)
        except asyncio.TimeoutError:
            await process.close_socket()
            raise SandboxError(f"{what}: no start-up line within {_START_TIMEOUT_S:g} s") from None
        if not line.startswith(_PID_PREFIX):
            await process.close_socket()
            raise SandboxError(f"{what}: unexpected start-up output {line[:100]!r}")
        process.pid = int(line[len(_PID_PREFIX) :])
        return process

    async def write(self, data: bytes) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.sock_sendall(self.sock, data)
        except OSError as exc:
            raise SandboxError(f"writing to a process in a container: {exc}") from exc

    async def read(self, n: int = 65536) -> bytes:
        while not self._ready and not self._eof:
            await self._fill()
        out = bytes(self._ready[:n])
        del self._ready[:n]
        return out

    async def _fill(self) -> None:
        """Receive from the socket and move whole frames' payloads to ``_ready``."""
        loop = asyncio.get_running_loop()
        try:
            chunk = await loop.sock_recv(self.sock, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            self._eof = True
            await self._check_container()
        self._frames += chunk
        while len(self._frames) >= _HEADER.size:
            _, size = _HEADER.unpack_from(self._frames)
            if len(self._frames) < _HEADER.size + size:
                break
            self._ready += self._frames[_HEADER.size : _HEADER.size + size]
            del self._frames[: _HEADER.size + size]

    async def _check_container(self) -> None:
        """At the end of the output: a container that died is the sandbox's loss
        (:class:`~gem_eval.errors.SandboxLostError`) or the engine's failure
        (:class:`SandboxError`), not a process that ended (a session would restart it)."""
        if self.sandbox.container is None:
            raise SandboxError("a process in a container: the sandbox was closed")
        await self.sandbox.check_running()

    async def _read_line(self) -> bytes:
        while b"\n" not in self._ready and not self._eof:
            await self._fill()
        line, _, rest = bytes(self._ready).partition(b"\n")
        self._ready = bytearray(rest)
        return line

    async def _signal(self, signal: str) -> None:
        if self.pid is None or self.sandbox.container is None:
            return
        with contextlib.suppress(SandboxError):
            await self.sandbox.exec(
                ["kill", f"-{signal}", "--", f"-{self.pid}"], timeout=10, user="root", cwd="/"
            )

    async def interrupt(self) -> None:
        await self._signal("INT")

    async def kill(self) -> None:
        await self._signal("KILL")
        await self.close_socket()

    async def close(self) -> None:
        """Close stdin (the process reads EOF and ends); no exec needed. The container's
        removal ends anything that does not."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
        await self.close_socket()

    async def close_socket(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        self._eof = True


def _buffered(io_sock: Any) -> bytes:
    """Bytes the HTTP client read past the upgrade headers before handing over the
    socket (they would otherwise be lost)."""
    response = getattr(io_sock, "_response", None)
    reader = getattr(getattr(getattr(response, "raw", None), "_fp", None), "fp", None)
    if reader is None or not hasattr(reader, "peek"):
        return b""
    try:
        pending: bytes = reader.peek()
    except (BlockingIOError, OSError, ValueError):
        return b""
    return bytes(reader.read1(len(pending))) if pending else b""
