"""``TmuxSession``: a tmux session in a sandbox, driven through tmux's control mode.

One process does everything: ``tmux -C`` (control mode), started with
:meth:`Sandbox.spawn`, and the server it starts, holding one session of one pane
(``width`` x ``height``, no status line, :data:`HISTORY_LIMIT` lines of scroll-back, no
configuration file read). Commands go to the process's stdin one per line; each answer
comes back between ``%begin`` and ``%end`` (or ``%error``) lines, in order. Between
answers tmux reports what the pane's programs wrote as ``%output`` lines (the bytes as
written, escape sequences included, octal-escaped), which feed the cast recorder and
tell when the pane last changed; ``%exit`` says the session ended (its shell exited, or
the server was killed).

Keys go in with ``send-keys``: an argument that is a key name (``C-c``, ``Escape``,
``Enter``, ``Up``) is that key, anything else is typed as text. The screen comes back
from ``capture-pane``, and the pane's state (scroll-back size, cursor, alternate screen,
the program in the foreground) from ``display-message``. Each exchange is one write and
one read on the process's pipe, not a ``docker exec``.

tmux itself comes from :mod:`gem_eval.tools.tmux_bundle` (any container) or the host
(bubblewrap).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gem_eval.errors import SandboxError
from gem_eval.tools import tmux_bundle
from gem_eval.tools.foreground import ForegroundProbe

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox, SandboxProcess

HISTORY_LIMIT = 50_000
"""Lines of scroll-back the pane keeps (Terminal-Bench's harness keeps as many)."""
START_TIMEOUT_S = 30.0
COMMAND_TIMEOUT_S = 30.0
SETTLE_S = 0.25
"""Quiet time after which a pane counts as having settled (its prompt drawn)."""
_RECENT_LIMIT = 1024 * 1024
_ESCAPED = re.compile(rb"\\([0-7]{3})")


class TmuxError(Exception):
    """A tmux command failed, or the session it was meant for has ended."""


@dataclass(frozen=True)
class PaneState:
    """What ``display-message`` says about the pane.

    Attributes:
        history: Lines in the scroll-back (lines that scrolled off the top).
        cursor_x: The cursor's column (0-based).
        cursor_y: The cursor's row on the screen (0-based).
        alternate: A full-screen program (vi, less) has the alternate screen up.
        command: The names of the programs in the pane's foreground.
        at_prompt: The pane's shell has the terminal (nothing it started runs in front).
    """

    history: int
    cursor_x: int
    cursor_y: int
    alternate: bool
    command: str
    at_prompt: bool


def quote(arg: str) -> str:
    """``arg`` as one double-quoted word of a tmux command line (control characters as
    octal escapes, so a newline cannot end the command)."""
    out = ['"']
    for ch in arg:
        if ch in '\\"$':
            out.append("\\" + ch)
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def unescape(data: bytes) -> bytes:
    """The bytes of a ``%output`` line's data (tmux writes ``\\ooo`` for control
    characters and the backslash)."""
    return _ESCAPED.sub(lambda m: bytes([int(m.group(1), 8)]), data)


class TmuxSession:
    """A tmux session in ``sandbox`` (see the module docstring).

    Args:
        sandbox: Where the session runs.
        width: The pane's columns.
        height: The pane's rows.
        user: Who the shell runs as (default: the sandbox's user).
        cwd: Where the shell starts (default: the sandbox's work directory).
        on_output: Called with each chunk of bytes the pane's programs wrote.
    """

    name = "gem-eval"

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        width: int = 160,
        height: int = 40,
        user: str | None = None,
        cwd: str | None = None,
        on_output: Callable[[bytes], None] | None = None,
    ) -> None:
        self.sandbox, self.width, self.height = sandbox, width, height
        self.user, self.cwd = user, cwd
        self.on_output = on_output
        self.process: SandboxProcess | None = None
        self.last_output = time.monotonic()
        self.shell = ""
        self._socket = f"gem-eval-{secrets.token_hex(4)}"
        self._reader: asyncio.Task[None] | None = None
        self._pending: list[asyncio.Future[tuple[bool, list[bytes]]]] = []
        self._block: tuple[bytes, bool, list[bytes]] | None = None
        self._lock = asyncio.Lock()
        self._started = asyncio.Event()
        self._stray: list[bytes] = []
        self._recent = bytearray()
        self._recent_base = 0
        self._failure: SandboxError | None = None
        self.ended = False
        # Each bubblewrap process has a PID namespace of its own: no probe sees the pane.
        self.probe = ForegroundProbe(sandbox, user) if tmux_bundle.in_container(sandbox) else None

    @property
    def alive(self) -> bool:
        """The session runs and answers."""
        return self.process is not None and not self.ended

    async def start(self) -> None:
        """Start tmux and its session; return once the shell's prompt has settled.

        Raises:
            SandboxError: tmux could not be started (the message says why).
        """
        await tmux_bundle.install(self.sandbox)
        argv = [*tmux_bundle.argv(self.sandbox), "-L", self._socket, "-f", "/dev/null", "-C"]
        argv += ["start-server", ";", "set", "-g", "history-limit", str(HISTORY_LIMIT), ";"]
        # "screen" is in every terminfo database (tmux 3.3's tmux-256color is not).
        argv += ["set", "-g", "status", "off", ";", "set", "-g", "default-terminal", "screen", ";"]
        argv += ["new-session", "-s", self.name]
        argv += ["-x", str(self.width), "-y", str(self.height)]
        argv += ["-c", self.cwd] if self.cwd else []
        self.process = await self.sandbox.spawn(argv, user=self.user, cwd=self.cwd)
        self._reader = asyncio.create_task(self._read())
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._started.wait(), START_TIMEOUT_S)
        if not self._started.is_set() or self.ended:
            said = b" / ".join(self._stray[-5:]).decode(errors="replace")
            await self.close()
            raise self._failure or SandboxError(f"tmux did not start: {said or 'no output'}")
        await self.settle(5.0, first=True)
        shell = quote("#{pane_current_command}")
        (self.shell,) = await self.command(f"display-message -p -t {self.name} {shell}")

    async def settle(self, limit: float, *, first: bool = False) -> None:
        """Wait until the pane has been quiet for :data:`SETTLE_S` (at most ``limit`` s;
        with ``first``, after it has written something: the shell's first prompt)."""
        deadline = time.monotonic() + limit
        while self.alive and (now := time.monotonic()) < deadline:
            quiet = now - self.last_output
            if quiet >= SETTLE_S and not (first and self.mark() == 0):
                return
            await asyncio.sleep(min(max(SETTLE_S - quiet, 0.02), deadline - now))

    async def command(self, line: str) -> list[str]:
        """Run one tmux command; its output lines.

        Raises:
            TmuxError: tmux answered with an error, or the session has ended.
            SandboxError: The sandbox failed.
        """
        async with self._lock:
            if not self.alive:
                raise self._failure or TmuxError("the terminal session has ended")
            assert self.process is not None
            future: asyncio.Future[tuple[bool, list[bytes]]] = (
                asyncio.get_running_loop().create_future()
            )
            self._pending.append(future)
            await self.process.write(line.encode() + b"\n")
        try:
            ok, lines = await asyncio.wait_for(future, COMMAND_TIMEOUT_S)
        except asyncio.TimeoutError:
            raise TmuxError(f"tmux did not answer {line.split()[0]} in time") from None
        text = [raw.decode(errors="replace") for raw in lines]
        if not ok:
            raise TmuxError(f"tmux {line.split()[0]}: {' / '.join(text) or 'failed'}")
        return text

    async def send_keys(self, keys: list[str], *, literal: bool = False) -> None:
        """Send keys: each a tmux key name or text (with ``literal``, always text)."""
        keys = [k for k in keys if k]
        if keys:
            flags = " -l" if literal else ""
            await self.command(
                f"send-keys -t {self.name}{flags} -- " + " ".join(quote(k) for k in keys)
            )

    async def state(self) -> PaneState:
        """The pane's scroll-back size, cursor, screen and foreground programs (asked of
        ``/proc``, see :mod:`~gem_eval.tools.foreground`; tmux's own answer if that fails)."""
        fields = "#{history_size} #{cursor_x} #{cursor_y} #{alternate_on} #{pane_pid}"
        (line,) = await self.command(
            f"display-message -p -t {self.name} {quote(fields + ' #{pane_current_command}')}"
        )
        history, x, y, alternate, pid, *command = line.split(" ", 5)
        names = await self.probe.ask(int(pid)) if self.probe and pid.isdigit() else None
        if names is None:  # tmux's answer: right unless a pipeline's leader has exited
            at_prompt, front = "".join(command) == self.shell, "".join(command)
        else:
            at_prompt, front = not names, ", ".join(dict.fromkeys(names)) or self.shell
        return PaneState(int(history), int(x), int(y), alternate == "1", front, at_prompt)

    async def capture(self, start: int | None = None) -> str:
        """The visible screen, or (``start``) the lines from ``start`` (negative: in the
        scroll-back) to the screen's end with wrapped lines joined; trailing blank lines
        dropped."""
        where = f" -J -S {start} -E -" if start is not None else ""
        lines = await self.command(f"capture-pane -p -t {self.name}{where}")
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(line.rstrip() for line in lines)

    def mark(self) -> int:
        """The position in the pane's output now (for :meth:`wait_for_output`)."""
        return self._recent_base + len(self._recent)

    async def wait_for_output(self, pattern: bytes, since: int, timeout: float | None) -> bool:
        """Wait until the pane has written ``pattern`` after position ``since``; False
        when ``timeout`` passed or the session ended first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            offset = max(0, since - self._recent_base)
            if pattern in self._recent[offset:]:
                return True
            if not self.alive or (deadline is not None and time.monotonic() >= deadline):
                return False
            await asyncio.sleep(0.05)

    async def close(self) -> None:
        """End the session and its server (safe to call twice)."""
        if self.probe is not None:
            await self.probe.close()
        process, self.process = self.process, None
        if process is None:
            return
        if not self.ended:
            with contextlib.suppress(OSError, SandboxError):
                await process.write(b"kill-server\n")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._ended(), 2.0)
        with contextlib.suppress(OSError, SandboxError):
            await process.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, SandboxError):
                await self._reader
        self.ended = True

    async def _ended(self) -> None:
        while not self.ended:
            await asyncio.sleep(0.02)

    async def _read(self) -> None:
        buffer = bytearray()
        process = self.process
        assert process is not None
        try:
            while chunk := await process.read():
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:end]).removesuffix(b"\r")
                    del buffer[: end + 1]
                    self._line(line)
        except SandboxError as exc:
            self._failure = exc
        finally:
            self.ended = True
            self._started.set()  # a start waiting for the session learns it failed
            for future in self._pending:
                if not future.done():
                    future.set_result((False, [b"the terminal session ended"]))
            self._pending.clear()

    def _line(self, line: bytes) -> None:
        if self._block is not None:
            guard, ours, lines = self._block
            kind, _, rest = line.partition(b" ")
            if kind in (b"%end", b"%error") and rest == guard:
                self._block = None
                if ours and self._pending:
                    self._pending.pop(0).set_result((kind == b"%end", lines))
                elif kind == b"%error":
                    self._stray += lines[-3:]
            else:
                lines.append(line)
        elif line.startswith(b"%begin "):
            guard = line[len(b"%begin ") :]
            # The last field is 1 for commands this client sent, 0 for the command line's.
            self._block = (guard, guard.endswith(b" 1"), [])
        elif line.startswith(b"%output "):
            _, _, data = line[len(b"%output ") :].partition(b" ")
            self._output(unescape(data))
        elif line.startswith(b"%session-changed"):
            self._started.set()
        elif line.startswith(b"%exit"):
            self.ended = True
        elif not line.startswith(b"%"):
            self._stray = [*self._stray[-9:], line]

    def _output(self, data: bytes) -> None:
        self.last_output = time.monotonic()
        self._recent += data
        if len(self._recent) > _RECENT_LIMIT:
            cut = len(self._recent) - _RECENT_LIMIT // 2
            del self._recent[:cut]
            self._recent_base += cut
        if self.on_output is not None:
            self.on_output(data)
