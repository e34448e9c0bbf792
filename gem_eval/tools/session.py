"""``Session``: a persistent interpreter or shell in a sandbox, one request at a time.

A session starts a process with :meth:`Sandbox.spawn`, sends it a request, and reads its
output until a marker line that carries a random nonce (so program output cannot fake
it) followed by the request's status. What came before the marker is the output.

Time limits: at a call's timeout the session sends SIGINT (the interpreter or shell
survives and keeps its state); if the marker does not come within a grace period the
process is killed and a new one starts on the next call. A process that dies on its own
(``os._exit``, a segfault, the OOM killer) is reported the same way: the agent is told
its state was lost.
"""

from __future__ import annotations

import asyncio
import secrets
from abc import ABC, abstractmethod
from dataclasses import dataclass

from gem_eval.errors import SandboxError
from gem_eval.sandbox.base import DEFAULT_OUTPUT_LIMIT, OutputCap, Sandbox, SandboxProcess
from gem_eval.tools.base import Tool

INTERRUPT_GRACE_S = 3.0


@dataclass
class Reply:
    """The answer to one request.

    Attributes:
        output: What the process printed (capped).
        status: The text after the marker (an exit code, a JSON status); ``None`` when
            the process died or had to be killed.
        timed_out: The request ran past its timeout.
        restarted: The process died or was killed; its state is gone.
    """

    output: str
    status: str | None
    timed_out: bool = False
    restarted: bool = False


class Session(ABC):
    """A long-lived process answering requests (see the module docstring)."""

    def __init__(self, sandbox: Sandbox, output_limit: int = DEFAULT_OUTPUT_LIMIT) -> None:
        self.sandbox = sandbox
        self.output_limit = output_limit
        self.nonce = secrets.token_hex(8)
        self.process: SandboxProcess | None = None
        self._buffer = bytearray()
        self._lock = asyncio.Lock()

    @abstractmethod
    def command(self) -> list[str]:
        """The process to start."""

    @abstractmethod
    def encode(self, request: str) -> bytes:
        """What to write for ``request`` (it must end by printing the marker)."""

    async def on_start(self) -> None:  # noqa: B027 - optional hook
        """Set the fresh process up (e.g. restore the working directory)."""

    @property
    def marker(self) -> bytes:
        return f"__GEM_EVAL_{self.nonce}__".encode()

    async def request(self, request: str, timeout: float) -> Reply:
        """Send one request and wait for its marker (see the module docstring)."""
        async with self._lock:
            if self.process is None:
                self.process = await self.sandbox.spawn(self.command())
                self._buffer.clear()
                await self.on_start()
            process = self.process
            await process.write(self.encode(request))
            cap = OutputCap(self.output_limit)
            try:
                status = await asyncio.wait_for(self._read_reply(cap), timeout)
                if status is not None:
                    return Reply(cap.text(), status)
                await self._discard()
                return Reply(cap.text(), None, restarted=True)
            except asyncio.TimeoutError:
                pass
            await process.interrupt()
            try:
                status = await asyncio.wait_for(self._read_reply(cap), INTERRUPT_GRACE_S)
            except asyncio.TimeoutError:
                status = None
            if status is None:
                await self._discard()
            return Reply(cap.text(), status, timed_out=True, restarted=status is None)

    async def _read_reply(self, cap: OutputCap) -> str | None:
        """Output up to the marker into ``cap``; the status text, or ``None`` at EOF."""
        assert self.process is not None
        marker = b"\n" + self.marker + b" "
        while True:
            at = self._buffer.find(marker)
            if at >= 0:
                end = self._buffer.find(b"\n", at + len(marker))
                if end >= 0:
                    cap.add(bytes(self._buffer[:at]))
                    status = self._buffer[at + len(marker) : end].decode(errors="replace")
                    del self._buffer[: end + 1]
                    return status
            else:  # keep a tail that may hold the start of the marker
                keep = len(marker) + 64
                if len(self._buffer) > keep:
                    cap.add(bytes(self._buffer[:-keep]))
                    del self._buffer[:-keep]
            chunk = await self.process.read()
            if not chunk:
                cap.add(bytes(self._buffer))
                self._buffer.clear()
                return None
            self._buffer += chunk

    async def _discard(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            await process.kill()

    async def close(self) -> None:
        """End the process (safe to call twice): an idle one is let go (stdin closed, it
        exits), one busy with a request (a cancelled episode) is killed."""
        if self._lock.locked():
            await self._discard()
            return
        process, self.process = self.process, None
        if process is not None:
            await process.close()


class SessionTool(Tool):
    """A tool answered by a :class:`Session` in the episode's sandbox (made on first use,
    ended by :meth:`aclose`).

    Args:
        timeout_s: Seconds a call may run before it is interrupted.
        output_limit: Bytes of output returned per call.
    """

    needs_sandbox = True

    def __init__(self, timeout_s: float, output_limit: int = DEFAULT_OUTPUT_LIMIT) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.timeout_s, self.output_limit = timeout_s, output_limit
        self.session: Session | None = None

    @abstractmethod
    def make_session(self, sandbox: Sandbox) -> Session:
        """A new session in ``sandbox``."""

    async def request(self, text: str, sandbox: Sandbox | None) -> Reply:
        """Send ``text`` to this tool's session in ``sandbox``."""
        if sandbox is None:
            raise SandboxError(f"the {self.name} tool needs a sandbox and the episode has none")
        if self.session is None or self.session.sandbox is not sandbox:
            self.session = self.make_session(sandbox)
        return await self.session.request(text, self.timeout_s)

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None
