"""``DockerSandbox``: one container per episode, locked down, always removed.

The container's PID 1 is a keep-alive that nothing inside can kill and that reaps every
orphan (see :mod:`gem_eval.sandbox.container_init`; how the container is made:
:mod:`gem_eval.sandbox.docker_launch`). It has no network unless the task allows it
(an agent program's container reaches the run's model endpoint and nothing else: see
:mod:`gem_eval.sandbox.endpoint_network`), memory/CPU/pids limits, a disk quota where
the engine supports one, ``no-new-privileges``, no host mounts (but the installed
agents' files, read-only, in an agent program's), and commands run as a non-root user
(``agent``).
Files written as ``owner="root"`` cannot be changed by that user. Every container
carries labels naming the run and the process that owns it (see
:mod:`gem_eval.sandbox.cleanup`), so leftovers of a killed run can be found and removed.
A sandbox with sidecars (a compose task's database) starts them first, each in its own
container, on a private network that the container joins (see
:mod:`gem_eval.sandbox.docker_sidecars`), and removes them with it.

What an agent does inside cannot make the sandbox fail as if the infrastructure had
(which would leave the episode unscored and replayed): a fork bomb is ended by the next
exec (see :mod:`gem_eval.sandbox.docker_rescue`); a container that stopped or vanished
anyway raises :class:`~gem_eval.errors.SandboxLostError`, and a failure while the
engine does not answer stays a plain :class:`~gem_eval.errors.SandboxError` (tell them
apart with :meth:`DockerSandbox.engine_alive`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shlex
import tarfile
import time
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from gem_eval.bundled import in_bytecode_cache
from gem_eval.errors import SandboxError, SandboxLostError
from gem_eval.records import Condition, SidecarSpec
from gem_eval.sandbox import (
    cleanup,
    docker_client,
    docker_launch,
    docker_rescue,
    endpoint_network,
    engine,
)
from gem_eval.sandbox.base import DEFAULT_OUTPUT_LIMIT, ExecResult, OutputCap, Sandbox
from gem_eval.sandbox.docker_process import DockerProcess
from gem_eval.sandbox.docker_sidecars import Sidecars
from gem_eval.sandbox.endpoint_network import EndpointNetwork
from gem_eval.sandbox.images import BASE_IMAGE

PREPARED_LABEL = "gem-eval.prepared"
"""Image label ``USER:WORKDIR``: the image has that user and work directory (owned by it)."""
_IMAGE_LABELS: dict[str, dict[str, str]] = {}
_KILL_GRACE_S = 2
_SAFETY_MARGIN_S = 10
_RESCUE_DEADLINE_S = 30.0


class DockerSandbox(Sandbox):
    """A container for one episode.

    Args:
        image: Image to run (default: the base image ``gem-eval sandbox build-base`` makes).
        user: User commands run as (created at start if the image lacks it).
        workdir: Working directory (created, owned by ``user``).
        network: Allow network access (default: ``network_mode="none"``).
        memory: Memory limit (``"1g"``, ``"512m"``); swap is not added on top.
        cpus: CPU limit (fractions allowed).
        pids: Process limit (a fork bomb stops here).
        disk: The most the agent may write (a quota on the container's writable layer
            where the engine supports one, else a cap on each file's size; ``None``: no
            limit). See :mod:`gem_eval.sandbox.docker_launch`.
        env: Environment variables of the container.
        run_id: The run this container belongs to (a label; ``cleanup`` uses it).
        output_limit: Bytes of each output stream kept per ``exec``.
        sidecars: Services started beside the container (their images built).
        hostname: The container's host name on the sidecars' network.
        depends_on: Sidecars that must be ready before the container starts.
        reach_endpoint: An agent program runs in the container and calls the run's model
            endpoint on this machine: without the network, the container joins the run's
            endpoint network, where only the endpoint answers (see
            :mod:`gem_eval.sandbox.endpoint_network`); :attr:`endpoint_network` is it.
        mounts: Host directories the container sees read-only (container path -> host
            path): the installed agents' files (see :mod:`gem_eval.agents.install`).
    """

    default_concurrency: ClassVar[int] = 4

    def __init__(
        self,
        image: str = BASE_IMAGE,
        *,
        user: str = "agent",
        workdir: str = "/workspace",
        network: bool = False,
        memory: str = "1g",
        cpus: float = 1.0,
        pids: int = 256,
        disk: str | None = "10g",
        env: dict[str, str] | None = None,
        run_id: str | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        sidecars: list[SidecarSpec] | None = None,
        hostname: str | None = None,
        depends_on: dict[str, Condition] | None = None,
        reach_endpoint: bool = False,
        mounts: dict[str, str] | None = None,
    ) -> None:
        self.image, self.user, self.workdir = image, user, workdir
        self.network, self.memory, self.cpus, self.pids = network, memory, cpus, pids
        self.disk = disk
        self.env = dict(env or {})
        self.run_id = run_id
        self.output_limit = output_limit
        self.hostname, self.depends_on = hostname, dict(depends_on or {})
        self.sidecars = Sidecars(self, sidecars) if sidecars else None
        self.reach_endpoint, self.mounts = reach_endpoint, dict(mounts or {})
        self.endpoint_network: EndpointNetwork | None = None
        self.container: Any = None
        self.launched: docker_launch.Launched | None = None
        self._closed = False
        self._outages = 0  # the engine's outage count when the sandbox started

    @property
    def id(self) -> str | None:
        return None if self.container is None else str(self.container.id)

    def describe(self) -> dict[str, str]:
        described = {"kind": "docker", "image": self.image}
        if self.launched is not None:  # known once started
            described |= {"init": self.launched.init, "disk": self.launched.disk}
        if self.sidecars is not None:
            described |= self.sidecars.describe()
        if self.endpoint_network is not None and not self.network:
            described |= self.endpoint_network.describe()
        return described

    @property
    def network_name(self) -> str | None:
        """The sidecars' network the container joins (``None``: no sidecars)."""
        return None if self.sidecars is None else self.sidecars.network

    async def start(self) -> None:
        self._closed = False
        self._outages = engine.outages()
        docker = docker_client.client()
        if self.reach_endpoint:
            self.endpoint_network = await endpoint_network.for_run(self.run_id)
        for source in self.mounts.values():
            Path(source).mkdir(parents=True, exist_ok=True)
        if self.sidecars is not None:
            await self.sidecars.start_before()
        made = asyncio.ensure_future(docker_launch.create(self, cleanup.labels(self.run_id)))
        try:
            self.launched = await asyncio.shield(made)
        except asyncio.CancelledError:  # Ctrl-C while Docker makes it: remove it once made
            with contextlib.suppress(Exception):
                self.launched = await made
                self.container = docker.containers.prepare_model({"Id": self.launched.id})
            await self.close()
            raise
        self.container = docker.containers.prepare_model({"Id": self.launched.id})
        cleanup.track(self.container.id)
        if self._closed:  # closed while starting (Ctrl-C): do not leave it behind
            await self.close()
            return
        await docker_launch.boot(self, self.container.id)
        if self.sidecars is not None:
            await self.sidecars.start_after()
        if not await self._image_is_prepared():
            await self._prepare()

    async def engine_alive(self) -> bool:
        """Whether the Docker engine answers a ping now (two seconds at most) and has not
        gone away since this sandbox started (a daemon restart stops its containers, then
        answers again); see :meth:`Sandbox.engine_alive`."""
        alive = await docker_client.engine_alive()
        return alive and engine.outages() == self._outages

    async def check_running(self) -> None:
        """Return when the container runs; else raise :class:`SandboxLostError` (it
        stopped or is gone) or :class:`SandboxError` (the engine does not answer)."""
        container = self._require()
        info = await docker_rescue.inspect(container.id)
        state = (info or {}).get("State") or {}
        if not state.get("Running"):
            error = SandboxError("the sandbox's container is not running")
            raise await docker_rescue.lost_or(error, container.id)

    async def _image_is_prepared(self) -> bool:
        """True when the image already has the user and work directory (the base image
        and images built from it say so in a label), saving an exec per container."""
        if self.image not in _IMAGE_LABELS:
            image = await docker_client.call(
                f"inspecting {self.image}", docker_client.client().images.get, self.image
            )
            _IMAGE_LABELS[self.image] = dict(image.labels or {})
        labels = _IMAGE_LABELS[self.image]
        return labels.get(PREPARED_LABEL) == f"{self.user}:{self.workdir}"

    async def _prepare(self) -> None:
        """Make sure the user and the work directory exist (one exec)."""
        user, workdir = shlex.quote(self.user), shlex.quote(self.workdir)
        script = f"mkdir -p {workdir}"
        if self.user != "root":
            script = (
                f"(id -u {user} >/dev/null 2>&1 || useradd -m {user} || adduser -D {user}) "
                f"&& {script} && chown {user} {workdir}"
            )
        result = await self.exec(script, timeout=60, user="root", cwd="/")
        if not result.ok:
            raise SandboxError(
                f"preparing a container from {self.image} failed: "
                f"{(result.stderr or result.stdout).strip()[:300]}"
            )

    async def close(self) -> None:
        self._closed = True
        container, self.container = self.container, None
        try:
            if container is not None:
                try:
                    await docker_client.call("removing a container", container.remove, force=True)
                except SandboxError as exc:
                    if "gone" not in str(exc):
                        raise
                cleanup.untrack(container.id)
        finally:
            if self.sidecars is not None:
                await self.sidecars.remove()

    def _require(self) -> Any:
        if self.container is None:
            raise SandboxError("the sandbox is not running (not started, or closed)")
        return self.container

    async def exec(
        self,
        cmd: str | list[str],
        timeout: float | None = 60.0,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """See :meth:`Sandbox.exec`. A command that could not start because the
        container's processes hold every PID ends them all (or restarts the container)
        and runs again; its ``stderr`` then starts with a line saying so.

        Raises:
            SandboxLostError: The container stopped or is gone.
            SandboxError: The engine failed or does not answer.
        """
        container = self._require()
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if timeout is not None:  # coreutils timeout kills the command's whole group
            argv = ["timeout", "-k", str(_KILL_GRACE_S), str(timeout), *argv]
        deadline = None if timeout is None else timeout + _KILL_GRACE_S + _SAFETY_MARGIN_S
        run = (argv, timeout, user or self.user, cwd or self.workdir, env, deadline)
        try:
            result = await self._exec_once(*run)
            if docker_rescue.could_not_start(result) and await self._pids_exhausted():
                note = await self._end_fork_bomb()
                result = await self._exec_once(*run)
                result.stderr = note + result.stderr
        except SandboxError as exc:
            raise await docker_rescue.lost_or(exc, container.id) from exc
        return result

    async def _exec_once(
        self,
        argv: list[str],
        timeout: float | None,
        user: str,
        cwd: str,
        env: dict[str, str] | None,
        deadline: float | None,
    ) -> ExecResult:
        container = self._require()
        api = docker_client.client().api
        began = time.monotonic()
        exec_id = (
            await docker_client.call(
                "exec in a container",
                api.exec_create,
                container.id,
                argv,
                user=user,
                workdir=cwd,
                environment=env,
            )
        )["Id"]
        self.started += 1
        out, err = OutputCap(self.output_limit), OutputCap(self.output_limit)
        stuck = await docker_client.call(
            "exec in a container", _pump, api, exec_id, out, err, deadline
        )
        info = await docker_client.call("exec in a container", api.exec_inspect, exec_id)
        code = info.get("ExitCode")
        elapsed = time.monotonic() - began
        timed_out = stuck or (
            timeout is not None and code in (124, 137) and elapsed >= timeout * 0.99
        )
        if not timed_out and code is None:
            raise SandboxError("exec in a container: the command's exit status is unknown")
        return ExecResult(out.text(), err.text(), None if timed_out else code, timed_out)

    async def _pids_exhausted(self) -> bool:
        return await docker_rescue.pids_exhausted(self._require().id, self.pids)

    async def _end_fork_bomb(self) -> str:
        """Kill every process but PID 1 (up to three tries), or restart the container
        when that cannot start (see :mod:`gem_eval.sandbox.docker_rescue`); the line
        that tells the agent."""
        said = f"[gem-eval: the sandbox's processes held all {self.pids} PIDs it may use: "
        for _ in range(3):
            killed = await self._exec_once(
                docker_rescue.KILL_ALL, None, "root", "/", None, _RESCUE_DEADLINE_S
            )
            if killed.exit_code == 0 and not await self._pids_exhausted():
                return said + "every process in it was killed]\n"
            await asyncio.sleep(0.2)
        await docker_launch.restart(self, self._require().id)
        return said + "it was restarted: every process in it ended, its files stay]\n"

    async def write_file(
        self, path: str, data: bytes | str, *, mode: int = 0o644, owner: str | None = None
    ) -> None:
        container = self._require()
        path = path if path.startswith("/") else f"{self.workdir}/{path}"
        parent, name = os.path.split(os.path.normpath(path))
        payload = data.encode() if isinstance(data, str) else data
        owner = owner or self.user
        inside = path == self.workdir or path.startswith(self.workdir.rstrip("/") + "/")
        if owner == "root" and self.user != "root" and inside:
            # The agent owns the work directory, so it could rename or replace anything in
            # it, root's files included.
            raise ValueError(
                f"{path}: a file the agent must not change cannot live in its work directory "
                f"{self.workdir}; put it elsewhere (e.g. /grader/...)"
            )
        archive = _tar_one(name, payload, mode)
        put = container.put_archive
        try:
            try:
                ok = await docker_client.call(f"writing {path}", put, parent, archive)
            except SandboxError as exc:
                if "gone" not in str(exc):  # NotFound: the parent directory is missing
                    raise
                await self._mkdir(parent, owner)
                ok = await docker_client.call(f"writing {path}", put, parent, archive)
        except SandboxError as exc:
            raise await self._failed(exc) from exc
        if not ok:
            raise SandboxError(f"writing {path}: Docker refused the archive")
        if owner != "root":
            # Archives arrive owned by root; hand the file (and any new parents) over.
            quoted = shlex.quote(path)
            result = await self.exec(f"chown {shlex.quote(owner)}: {quoted}", user="root", cwd="/")
            if not result.ok:
                raise SandboxError(f"writing {path}: chown failed: {result.stderr.strip()}")

    async def read_file(self, path: str) -> bytes:
        container = self._require()
        path = path if path.startswith("/") else f"{self.workdir}/{path}"
        try:
            chunks, _ = await docker_client.call(f"reading {path}", container.get_archive, path)
        except SandboxError as exc:
            failed = await self._failed(exc)
            if failed is exc and "gone" in str(exc):  # NotFound: the file, not the container
                raise FileNotFoundError(path) from None
            raise failed from exc
        data = await docker_client.call(f"reading {path}", lambda: b"".join(chunks))
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = tar.next()
            extracted = None if member is None else tar.extractfile(member)
            if extracted is None:
                raise IsADirectoryError(path)
            return extracted.read()

    async def copy_dir(self, source: Path, dest: str) -> None:
        """One archive for the whole directory (see :meth:`Sandbox.copy_dir`)."""
        container = self._require()
        await self._mkdir(dest, "root")
        archive = await asyncio.to_thread(_tar_dir, source)
        put = container.put_archive
        try:
            ok = await docker_client.call(f"copying {source} to {dest}", put, dest, archive)
        except SandboxError as exc:
            raise await self._failed(exc) from exc
        if not ok:
            raise SandboxError(f"copying {source} to {dest}: Docker refused the archive")

    async def spawn(
        self,
        cmd: list[str],
        *,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> DockerProcess:
        """See :meth:`Sandbox.spawn`; a start that fails because the container's processes
        hold every PID ends them (as :meth:`exec` does) and tries once more."""
        container = self._require()
        user, cwd = user or self.user, cwd or self.workdir
        try:
            try:
                process = await DockerProcess.start(
                    self, container.id, cmd, user=user, cwd=cwd, env=env
                )
            except SandboxError as exc:
                if "OCI runtime exec failed" not in str(exc) or not await self._pids_exhausted():
                    raise
                await self._end_fork_bomb()
                process = await DockerProcess.start(
                    self, container.id, cmd, user=user, cwd=cwd, env=env
                )
        except SandboxError as exc:
            raise await docker_rescue.lost_or(exc, container.id) from exc
        self.started += 1  # it came up (its start-up line): from here it runs
        return process

    async def _failed(self, exc: SandboxError) -> SandboxError:
        """``exc`` classified: the disk quota full or the container lost (both
        :class:`SandboxLostError`), else ``exc`` itself."""
        quota = self.disk if self.launched and self.launched.disk == "quota" else None
        full = docker_rescue.disk_full(exc, quota)
        if isinstance(full, SandboxLostError):
            return full
        return await docker_rescue.lost_or(exc, self._require().id)

    async def _mkdir(self, path: str, owner: str) -> None:
        script = f"mkdir -p {shlex.quote(path)}"
        if owner != "root":
            script += f" && chown {shlex.quote(owner)}: {shlex.quote(path)}"
        result = await self.exec(script, user="root", cwd="/")
        if not result.ok:
            raise SandboxError(f"creating {path}: {result.stderr.strip()}")


def _pump(api: Any, exec_id: str, out: OutputCap, err: OutputCap, deadline: float | None) -> bool:
    """Read an exec's output into the caps (in a Docker thread); True when stuck past
    ``deadline`` (the in-container timeout failed to end it)."""
    stream = api.exec_start(exec_id, stream=True, demux=True)
    ends = None if deadline is None else time.monotonic() + deadline
    for stdout, stderr in stream:
        if stdout:
            out.add(stdout)
        if stderr:
            err.add(stderr)
        if ends is not None and time.monotonic() > ends:
            return True
    return False


def _tar_one(name: str, payload: bytes, mode: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(payload), mode, int(time.time())
        tar.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


def _tar_dir(source: Path) -> bytes:
    """``source``'s contents as a tar (root-owned entries, modes kept), ``__pycache__``
    left out (see :func:`gem_eval.bundled.in_bytecode_cache`)."""
    buffer = io.BytesIO()

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if in_bytecode_cache(PurePosixPath(info.name)):
            return None  # leaves out a directory's contents too
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(source.iterdir()):
            tar.add(path, arcname=path.name, filter=as_root)
    return buffer.getvalue()
