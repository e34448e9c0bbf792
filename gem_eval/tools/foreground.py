"""``ForegroundProbe``: which processes a terminal's foreground job is, asked of
``/proc`` inside the sandbox.

tmux's ``#{pane_current_command}`` names the leader of the terminal's foreground process
group, and falls back to the pane's shell when that leader has exited: in ``seq 1 500
| less``, once ``seq`` is done, it says ``bash`` while ``less`` has the terminal. So the
terminal tool asks ``/proc`` itself, through one long-lived POSIX ``sh`` per session
(no ``docker exec`` per question): given the shell's PID, its ``stat`` line says which
process group has its terminal (``tpgid``); when that is not the shell's own group, the
live (not zombie) members of that group are listed by name.

One question is one line in, one line out: ``-`` (the shell has the terminal: it is at
its prompt), ``+ name name...`` (those processes have it), ``?`` (the shell is gone).
Process names are as the kernel keeps them (at most 15 characters).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from gem_eval.errors import SandboxError

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox, SandboxProcess

ANSWER_TIMEOUT_S = 10.0

# Fields of /proc/PID/stat after the ")" closing the name: state ppid pgrp session
# tty_nr tpgid ... (the name itself may hold spaces and parentheses).
SCRIPT = r"""
exec 2>/dev/null
while read -r pid; do
  if ! read -r s < "/proc/$pid/stat"; then echo "?"; continue; fi
  r=${s##*) }; set -- $r; group=$3; front=$6
  if [ "$front" = "$group" ]; then echo "-"; continue; fi
  names=
  for f in /proc/[0-9]*/stat; do
    read -r l < "$f" || continue
    r=${l##*) }; set -- $r
    if [ "$3" = "$front" ] && [ "$1" != Z ]; then n=${l#*(}; names="$names ${n%)*}"; fi
  done
  echo "+$names"
done
"""


class ForegroundProbe:
    """Answers "what has the terminal of this shell?" (see the module docstring)."""

    def __init__(self, sandbox: Sandbox, user: str | None = None) -> None:
        self.sandbox, self.user = sandbox, user
        self.process: SandboxProcess | None = None
        self._buffer = bytearray()
        self._lock = asyncio.Lock()

    async def ask(self, shell_pid: int) -> list[str] | None:
        """``[]`` when the shell has its terminal (it is at its prompt); else the names of
        the processes that have it; ``None`` when that cannot be told."""
        async with self._lock:
            try:
                if self.process is None:
                    self.process = await self.sandbox.spawn(["sh", "-c", SCRIPT], user=self.user)
                await self.process.write(f"{shell_pid}\n".encode())
                line = await asyncio.wait_for(self._line(), ANSWER_TIMEOUT_S)
            except (SandboxError, asyncio.TimeoutError, OSError):
                await self.close()
                return None
        if line == "-":
            return []
        # "+" alone: the group in front has no live process left (the shell is taking
        # the terminal back): no answer either way.
        names = line[1:].split() if line.startswith("+") else []
        return names or None

    async def _line(self) -> str:
        assert self.process is not None
        while (end := self._buffer.find(b"\n")) < 0:
            chunk = await self.process.read()
            if not chunk:
                raise SandboxError("the foreground probe ended")
            self._buffer += chunk
        line = self._buffer[:end].decode(errors="replace").strip()
        del self._buffer[: end + 1]
        return line

    async def close(self) -> None:
        """End the probe's shell (safe to call twice)."""
        process, self.process = self.process, None
        self._buffer.clear()
        if process is not None:
            with contextlib.suppress(SandboxError, OSError):
                await process.close()
