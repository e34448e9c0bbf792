"""The sandbox interface: where agent code and commands run, isolated from the host.

A :class:`Sandbox` runs one-shot commands (:meth:`Sandbox.exec`), moves files in and out,
and starts long-lived processes (:meth:`Sandbox.spawn`) that tools use for persistent
sessions (a Python interpreter, a shell, an MCP server over stdio). Implementations:
:class:`~gem_eval.sandbox.docker.DockerSandbox` (a container per episode) and
:class:`~gem_eval.sandbox.local.LocalSandbox` (bubblewrap, or an explicitly unsafe
plain subprocess).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import ClassVar

from gem_eval.bundled import in_bytecode_cache

DEFAULT_OUTPUT_LIMIT = 64 * 1024
"""Bytes of stdout (and, separately, stderr) kept per call; the rest is cut with a marker."""


@dataclass
class ExecResult:
    """What a command printed and how it ended.

    Attributes:
        stdout: Standard output, decoded as UTF-8 (invalid bytes replaced), capped.
        stderr: Standard error, likewise.
        exit_code: The exit status; ``None`` when the command was killed at its timeout.
        timed_out: True when the command ran past its timeout and was killed.
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class OutputCap:
    """Keeps the first ``limit`` bytes of a stream and counts the rest.

    ``text()`` ends with ``[... N bytes cut ...]`` when anything was dropped, so the
    agent (and the transcript reader) knows the output is incomplete.
    """

    def __init__(self, limit: int = DEFAULT_OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.cut = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        self.cut += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        out = self.kept.decode("utf-8", errors="replace")
        if self.cut:
            out += f"\n[... {self.cut} bytes cut: output limit is {self.limit} bytes ...]"
        return out


def cap_text(data: bytes, limit: int = DEFAULT_OUTPUT_LIMIT) -> str:
    """``data`` decoded and capped like an :class:`OutputCap`."""
    cap = OutputCap(limit)
    cap.add(data)
    return cap.text()


class SandboxProcess(ABC):
    """A long-lived process inside a sandbox, talking over its stdin and stdout.

    Its stderr is merged into stdout. Reads return ``b""`` once the process has ended.
    """

    @abstractmethod
    async def write(self, data: bytes) -> None:
        """Send ``data`` to the process's stdin."""

    @abstractmethod
    async def read(self, n: int = 65536) -> bytes:
        """Up to ``n`` bytes of output, waiting for at least one; ``b""`` at EOF."""

    @abstractmethod
    async def kill(self) -> None:
        """End the process and everything it started (its process group)."""

    @abstractmethod
    async def interrupt(self) -> None:
        """Send SIGINT to the process (a Python interpreter raises KeyboardInterrupt)."""

    async def close(self) -> None:
        """Let an idle process go: close its stdin, so a shell or interpreter reading it
        exits (cheaper than :meth:`kill` where killing costs a round trip). By default,
        :meth:`kill`."""
        await self.kill()


class Sandbox(ABC):
    """An isolated place to run commands for one episode (or one task).

    Use as ``async with sandbox:`` (``start`` then ``close``), or call them yourself.
    ``close`` must be safe to call twice and after a failed ``start``.

    Attributes:
        default_concurrency: How many sandboxes of this kind a run keeps alive at once
            unless told otherwise (containers cost memory and start time).
        output_limit: Bytes of each output stream kept per ``exec``.
        user: The user commands run as when ``exec`` is not told otherwise.
        workdir: The working directory commands start in.
    """

    default_concurrency: ClassVar[int] = 4
    output_limit: int = DEFAULT_OUTPUT_LIMIT
    user: str = "root"
    workdir: str = "/"
    started: int = 0
    """Commands and processes that began to run in the sandbox so far (an ``exec`` whose
    program was launched, a ``spawn`` that came up, a call sent to an MCP server running
    in it): the agent loop charges a lost sandbox to the agent only once one of the
    agent's own did."""

    @abstractmethod
    async def start(self) -> None:
        """Create the sandbox (start the container, make the work directory)."""

    @abstractmethod
    async def close(self) -> None:
        """Destroy the sandbox and everything in it."""

    @abstractmethod
    async def exec(
        self,
        cmd: str | list[str],
        timeout: float | None = 60.0,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run a command to completion.

        Args:
            cmd: A shell command line (run with ``sh -c``) or an argument list.
            timeout: Seconds before the command (and its children) are killed.
            user: Run as this user (default: the sandbox's user).
            cwd: Working directory (default: the sandbox's ``workdir``).
            env: Extra environment variables.
        """

    @abstractmethod
    async def write_file(
        self, path: str, data: bytes | str, *, mode: int = 0o644, owner: str | None = None
    ) -> None:
        """Write a file (parent directories are created).

        ``owner`` defaults to the sandbox's user; ``owner="root"`` with the default mode
        makes a file the agent can read but not change (graders, tests). Such files go
        outside the agent's work directory (the Docker sandbox refuses them there: the
        agent could rename its way around them).
        """

    @abstractmethod
    async def read_file(self, path: str) -> bytes:
        """The bytes of a file; raises :class:`FileNotFoundError` when it is missing."""

    async def run_root(self, script: str, what: str, timeout: float | None = 60.0) -> str:
        """Run a shell script as root from ``/`` (the grader's and a service's own
        steps); its output, or :class:`SandboxError` saying ``what`` failed."""
        from gem_eval.errors import SandboxError

        result = await self.exec(["sh", "-c", script], timeout=timeout, user="root", cwd="/")
        if not result.ok:
            detail = "timed out" if result.timed_out else (result.stderr or result.stdout)
            raise SandboxError(f"{what} failed: {detail.strip()[-300:]}")
        return result.stdout

    async def copy_dir(self, source: Path, dest: str) -> None:
        """Copy the host directory ``source`` (its contents, modes kept) to ``dest``,
        owned by root: test suites, solutions and initial state put in by the grader.

        ``__pycache__`` directories are left out (see
        :func:`gem_eval.bundled.in_bytecode_cache`)."""
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(source)
            if not path.is_file() or in_bytecode_cache(relative):
                continue
            target = f"{dest.rstrip('/')}/{relative.as_posix()}"
            await self.write_file(
                target, path.read_bytes(), mode=path.stat().st_mode & 0o777, owner="root"
            )

    @abstractmethod
    async def spawn(
        self,
        cmd: list[str],
        *,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> SandboxProcess:
        """Start a long-lived process (stdin/stdout pipes, stderr merged into stdout)."""

    async def engine_alive(self) -> bool:
        """Whether what runs this sandbox (the Docker daemon) answers now; never raises.

        After a failure, this tells a lost sandbox from a lost engine: a
        :class:`~gem_eval.errors.SandboxLostError` (the container stopped or is gone)
        while the engine answers is the sandbox's own loss; any failure while the engine
        does not answer is the engine's. Sandboxes without an engine (bubblewrap) answer
        ``True``.
        """
        return True

    def describe(self) -> dict[str, str]:
        """What the run manifest records about this sandbox (kind, image, ...)."""
        return {"kind": type(self).__name__}

    async def __aenter__(self) -> Sandbox:
        try:
            await self.start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
