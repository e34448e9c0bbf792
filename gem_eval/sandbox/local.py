"""``LocalSandbox``: commands run on this machine, inside bubblewrap.

Each command runs in fresh Linux namespaces (``bwrap --unshare-all``): no network but
loopback, its own PID namespace, the host's file system mounted read-only (``/root`` and
``/home`` hidden behind empty directories), and two
private writable directories that persist for the sandbox's life: the work directory
(``/workspace``) and ``/tmp``. Resource limits (address space, CPU seconds, file size,
open files) are set with ``setrlimit``. Starting a command costs ~8 ms.

``LocalSandbox(unsafe=True)`` drops bubblewrap and runs plain subprocesses with the same
rlimits in a temporary directory: NO isolation (the agent can read and write your files
and reach the network). It exists for machines without bubblewrap and must be chosen
explicitly.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
import tempfile
from pathlib import Path
from typing import ClassVar

from gem_eval.errors import SandboxUnavailableError
from gem_eval.sandbox.base import DEFAULT_OUTPUT_LIMIT, ExecResult, OutputCap, Sandbox
from gem_eval.sandbox.process import PipeProcess

_SAFE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
}
"""The environment commands start with: nothing of the host's (no API keys leak in)."""


class LocalSandbox(Sandbox):
    """A sandbox on this machine (see the module docstring).

    Args:
        unsafe: Run without bubblewrap (no isolation). Must be asked for.
        memory_mb: Address-space limit per process (``RLIMIT_AS``).
        cpu_seconds: CPU-time limit per command (``RLIMIT_CPU``).
        max_file_mb: Largest file a command may write (``RLIMIT_FSIZE``).
        output_limit: Bytes of each output stream kept per ``exec``.
        workdir: Where the work directory appears inside the sandbox.
    """

    default_concurrency: ClassVar[int] = 8

    def __init__(
        self,
        *,
        unsafe: bool = False,
        memory_mb: int | None = 2048,
        cpu_seconds: int | None = 600,
        max_file_mb: int | None = 512,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        workdir: str = "/workspace",
    ) -> None:
        self.unsafe = unsafe
        self.memory_mb, self.cpu_seconds, self.max_file_mb = memory_mb, cpu_seconds, max_file_mb
        self.output_limit = output_limit
        self._inner_workdir = workdir
        self.workdir = workdir
        self.user = "agent"
        self._root: Path | None = None
        self._protected: set[str] = set()
        self._bwrap = ""

    async def start(self) -> None:
        if not self.unsafe:
            bwrap = shutil.which("bwrap")
            if bwrap is None:
                raise SandboxUnavailableError(
                    "bubblewrap (bwrap) is not installed: apt-get install bubblewrap, or "
                    "choose the unsafe local sandbox explicitly (sandbox: {type: local, "
                    "unsafe: true}; no isolation)"
                )
            self._bwrap = bwrap
        self._root = Path(tempfile.mkdtemp(prefix="gem-eval-sandbox-"))
        (self._root / "work").mkdir()
        (self._root / "tmp").mkdir()
        if self.unsafe:
            self.workdir = str(self._root / "work")
        else:
            probe = await self.exec(["true"], timeout=30)
            if probe.exit_code != 0:
                raise SandboxUnavailableError(
                    f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()}"
                )

    async def close(self) -> None:
        if self._root is not None:
            await asyncio.to_thread(shutil.rmtree, self._root, True)
            self._root = None

    def describe(self) -> dict[str, str]:
        return {"kind": "local-unsafe" if self.unsafe else "local-bwrap"}

    # -- paths ----------------------------------------------------------------------

    def host_path(self, path: str) -> Path:
        """Where a sandbox path lives on the host (only the writable directories)."""
        root = self._require_root()
        inner = path if path.startswith("/") else f"{self.workdir}/{path}"
        inner = os.path.normpath(inner)
        if self.unsafe:
            return Path(inner)
        for mount, host in ((self._inner_workdir, root / "work"), ("/tmp", root / "tmp")):
            if inner == mount or inner.startswith(mount + "/"):
                return host / os.path.relpath(inner, mount)
        raise ValueError(
            f"{path}: a local sandbox can only hold files under {self._inner_workdir} or /tmp"
        )

    def _require_root(self) -> Path:
        if self._root is None:
            raise RuntimeError("the sandbox is not started")
        return self._root

    async def write_file(
        self, path: str, data: bytes | str, *, mode: int = 0o644, owner: str | None = None
    ) -> None:
        target = self.host_path(path)
        payload = data.encode() if isinstance(data, str) else data

        def write() -> None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(payload)
            target.chmod(mode)

        await asyncio.to_thread(write)
        if owner == "root" and not self.unsafe:  # bound read-only over itself
            self._protected.add(str(target))

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(self.host_path(path).read_bytes)

    # -- running --------------------------------------------------------------------

    def _argv(self, cmd: list[str], user: str | None, cwd: str | None) -> list[str]:
        if self.unsafe:
            return cmd
        root = self._require_root()
        uid = "0" if (user or self.user) == "root" else "1000"
        # No --new-session: the caller starts bwrap in a session of its own (no terminal to
        # hijack), and SIGINT to that process group must reach the command inside.
        argv = [self._bwrap, "--unshare-all", "--die-with-parent"]
        argv += _root_mounts(self._inner_workdir)
        argv += ["--dev", "/dev", "--proc", "/proc"]
        argv += ["--bind", str(root / "tmp"), "/tmp"]
        argv += ["--bind", str(root / "work"), self._inner_workdir]
        for host in sorted(self._protected):
            argv += ["--ro-bind", host, self._inner_path(Path(host))]
        argv += ["--uid", uid, "--gid", uid, "--chdir", cwd or self.workdir, "--"]
        return argv + cmd

    def _inner_path(self, host: Path) -> str:
        root = self._require_root()
        if host.is_relative_to(root / "work"):
            return str(Path(self._inner_workdir) / host.relative_to(root / "work"))
        return str(Path("/tmp") / host.relative_to(root / "tmp"))

    def _preexec(self) -> None:  # runs in the child between fork and exec
        # A process started with SIGINT ignored (gem-eval run from a script's background
        # job) would pass that on, and a timed-out command could not be interrupted:
        # the sandbox's processes start with SIGINT's default action, as in a container.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        limits = [
            (resource.RLIMIT_CPU, self.cpu_seconds),
            (resource.RLIMIT_FSIZE, self.max_file_mb and self.max_file_mb * 1024 * 1024),
            (resource.RLIMIT_AS, self.memory_mb and self.memory_mb * 1024 * 1024),
        ]
        pairs = [(which, (value, value)) for which, value in limits if value]
        # The address-space limit last, with nothing left to allocate: this child is a copy
        # of gem-eval's process, often larger than the limit (litellm loaded), so Python
        # could not allocate after it ("Exception occurred in preexec_fn", now and then).
        for which, pair in pairs:
            resource.setrlimit(which, pair)

    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        home = self.workdir
        return {**_SAFE_ENV, "HOME": home, **(env or {})}

    async def exec(
        self,
        cmd: str | list[str],
        timeout: float | None = 60.0,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        argv = self._argv(["sh", "-c", cmd] if isinstance(cmd, str) else cmd, user, cwd)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=(cwd or self.workdir) if self.unsafe else None,
            env=self._env(env),
            start_new_session=True,
            preexec_fn=self._preexec,
        )
        self.started += 1
        out, err = OutputCap(self.output_limit), OutputCap(self.output_limit)
        assert proc.stdout is not None and proc.stderr is not None
        readers = asyncio.gather(_drain(proc.stdout, out), _drain(proc.stderr, err))
        timed_out = False
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            timed_out = True
        finally:
            if proc.returncode is None:
                _kill_group(proc.pid)
                await proc.wait()
        try:
            await asyncio.wait_for(readers, 5)
        except asyncio.TimeoutError:  # an escaped grandchild holds the pipe open
            readers.cancel()
        code = None if timed_out else proc.returncode
        return ExecResult(out.text(), err.text(), code, timed_out)

    async def spawn(
        self,
        cmd: list[str],
        *,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> PipeProcess:
        proc = await asyncio.create_subprocess_exec(
            *self._argv(cmd, user, cwd),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=(cwd or self.workdir) if self.unsafe else None,
            env=self._env(env),
            start_new_session=True,
            preexec_fn=self._preexec,
        )
        self.started += 1
        return PipeProcess(proc, wrapped=not self.unsafe)


_HIDDEN = ("root", "home")
"""Host directories replaced by empty ones inside: they hold users' keys and caches."""


def _root_mounts(workdir: str) -> list[str]:
    """The host's top-level directories, read-only, on the sandbox's own root.

    (Binding ``/`` itself would leave no place to mount the work directory.)
    """
    skip = {"proc", "dev", "tmp", "sys", workdir.strip("/").split("/")[0]}
    argv: list[str] = []
    for entry in sorted(os.scandir("/"), key=lambda e: e.name):
        if entry.name in skip:
            continue
        path = f"/{entry.name}"
        if entry.is_symlink():
            argv += ["--symlink", os.readlink(path), path]
        elif entry.name in _HIDDEN:
            argv += ["--tmpfs", path]
        elif entry.is_dir():
            argv += ["--ro-bind", path, path]
    return [*argv, "--ro-bind", "/sys", "/sys"]


async def _drain(stream: asyncio.StreamReader, cap: OutputCap) -> None:
    while chunk := await stream.read(65536):
        cap.add(chunk)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
