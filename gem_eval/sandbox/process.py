"""``PipeProcess``: a :class:`SandboxProcess` over a local asyncio subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from gem_eval.sandbox.base import SandboxProcess


class PipeProcess(SandboxProcess):
    """A subprocess started in its own session, talking over pipes.

    Args:
        proc: The subprocess (the leader of its process group).
        wrapped: The leader is a wrapper (bubblewrap) that must not see SIGINT itself
            (it would die and take the command with it); interrupts go to the rest of
            the group.
    """

    def __init__(self, proc: asyncio.subprocess.Process, wrapped: bool = False) -> None:
        self.proc = proc
        self.wrapped = wrapped

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def read(self, n: int = 65536) -> bytes:
        assert self.proc.stdout is not None
        return await self.proc.stdout.read(n)

    async def interrupt(self) -> None:
        if not self.wrapped:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGINT)
            return
        for pid in _group_members(self.proc.pid):
            if pid != self.proc.pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGINT)

    async def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()


def _group_members(pgid: int) -> list[int]:
    """PIDs of the processes in process group ``pgid`` (from ``/proc``)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) "
        if len(fields) > 2 and int(fields[2]) == pgid:
            members.append(int(entry))
    return members
