"""Harbor's environment calls (exec, upload, download), answered with gem-eval's
:class:`~gem_eval.sandbox.base.Sandbox` as Harbor's docker environment answers them.

What Harbor's agents see of a command must be what they see under ``harbor run``
(Terminus-2 shows it to the model): it runs as ``bash -c COMMAND`` (no login shell, no
tty, no stdin), its stderr merged into its stdout, in ``cwd`` (the sandbox's work
directory by default), with the given env and user, and no time limit unless one is
given; its output is never cut (the sandbox's output cap is lifted while an agent plays:
:meth:`SandboxCalls.uncapped`). Paths on this machine are shared by both processes, so
they need no translation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from gem_eval.errors import SandboxError

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox

UNCAPPED = 1 << 28
"""Bytes of output kept per command while an agent plays: more than any screen or log
an agent reads, so nothing is cut (Harbor's docker environment keeps all)."""
_BASH = 'exec bash -c "$1" 2>&1'
"""``sh -c`` this with the command as ``$1``: bash runs exactly the command, with stderr
on stdout at the descriptor (the order the command wrote them in)."""


class SandboxCalls:
    """Answers one episode's calls on its sandbox.

    Attributes:
        lost: The first :class:`SandboxError` a call met (the container stopped, the
            engine failed): the episode's fault is that, whatever the agent says next.
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.lost: SandboxError | None = None

    @contextlib.contextmanager
    def uncapped(self) -> Iterator[None]:
        """Lift the sandbox's output cap for the agent's commands, then restore it
        (the verifier runs with the usual cap)."""
        before = self.sandbox.output_limit
        self.sandbox.output_limit = max(before, UNCAPPED)
        try:
            yield
        finally:
            self.sandbox.output_limit = before

    async def answer(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """The result of one call (``exec``, ``upload``, ``download``).

        Raises:
            SandboxError: The sandbox failed (kept in :attr:`lost`).
            OSError, ValueError: A path could not be read or written.
        """
        try:
            if op == "exec":
                return await self.exec(
                    args["command"],
                    args.get("cwd"),
                    args.get("env"),
                    args.get("timeout_s"),
                    args.get("user"),
                )
            source, target, whole = args["source"], args["target"], bool(args.get("dir"))
            if op == "upload":
                await (self.upload_dir if whole else self.upload_file)(Path(source), target)
            elif op == "download":
                await (self.download_dir if whole else self.download_file)(source, Path(target))
            else:
                raise ValueError(f"unknown call {op!r}")
            return {}
        except SandboxError as exc:
            self.lost = self.lost or exc
            raise

    async def exec(
        self,
        command: str,
        cwd: str | None,
        env: dict[str, str] | None,
        timeout_s: float | None,
        user: str | None,
    ) -> dict[str, Any]:
        result = await self.sandbox.exec(
            ["sh", "-c", _BASH, "sh", command], timeout=timeout_s, user=user, cwd=cwd, env=env
        )
        # Anything on stderr came from gem-eval's own rescue of the sandbox (a note
        # before the output) or from sh failing to start bash.
        output = result.stderr + result.stdout
        return {
            "stdout": output,
            "return_code": result.exit_code or 0,
            "timed_out": result.timed_out,
        }

    async def upload_file(self, source: Path, target: str) -> None:
        mode = source.stat().st_mode & 0o777
        await self.sandbox.write_file(target, source.read_bytes(), mode=mode)

    async def upload_dir(self, source: Path, target: str) -> None:
        await self.sandbox.copy_dir(source, target)

    async def download_file(self, source: str, target: Path) -> None:
        data = await self.sandbox.read_file(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    async def download_dir(self, source: str, target: Path) -> None:
        """Every file under ``source`` into ``target`` (as ``docker cp SRC/. DEST``).

        Raises:
            FileNotFoundError: ``source`` is not a directory in the sandbox.
        """
        listing = await self.sandbox.exec(
            ["find", source, "-type", "f", "-print0"], timeout=60, user="root", cwd="/"
        )
        if not listing.ok:
            raise FileNotFoundError(f"{source} in the sandbox: {listing.stderr.strip()[-200:]}")
        target.mkdir(parents=True, exist_ok=True)
        root = PurePosixPath(source)
        for name in filter(None, listing.stdout.split("\0")):
            relative = PurePosixPath(name).relative_to(root)
            await self.download_file(name, target.joinpath(*relative.parts))
