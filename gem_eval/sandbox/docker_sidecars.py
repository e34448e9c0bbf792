"""Sidecars: the services beside a sandbox's container, on a private network per episode.

A compose task's database or web server runs in containers of its own. For each episode
:class:`Sidecars` makes a bridge network of its own, starts every sidecar on it in the
order compose's ``depends_on`` gives, waits as its conditions say (``service_started``,
``service_healthy`` by the sidecar's Docker health check,
``service_completed_successfully``), and the sandbox's container joins the same network
under its compose service name (``client`` in Terminal-Bench 1, ``main`` in Harbor).
Each service's name (and aliases) is a host name there, resolved by Docker's DNS.

The network is what the sandbox's own would be:

* no network allowed (the default, a task without ``allow_internet``, ``--no-network``):
  the network is ``internal`` (no route out, no outside DNS) and its bridge has no IPv4
  address on the host (``com.docker.network.bridge.inhibit_ipv4``): without that, an
  internal network still reaches every service listening on the host's addresses
  (measured: a container on a plain internal network connected to a host port on
  172.17.0.1 and on the host's eth0 address; with it, neither, while service names
  still resolve and connect). ``CAP_NET_RAW`` is dropped, so no one forges frames to
  the bridge. IPv6 is off in the containers (Docker's default for such networks).
* network allowed: a plain bridge network (a route out through the host's NAT).

Sidecars get the same treatment as the container: its memory, CPU and process limits
at most (a smaller one of their own is kept), ``no-new-privileges``, a per-file size cap
of the container's disk bound, Docker's init as PID 1 (zombies reaped), and the labels
that name the run and the owning process, as has the network: a run removes them all
with the container (:meth:`Sidecars.remove`), and ``gem-eval sandbox cleanup`` removes
those of a killed run (:mod:`gem_eval.sandbox.cleanup`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import tarfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval.errors import SandboxError
from gem_eval.records import Condition, SidecarSpec
from gem_eval.sandbox import cleanup, docker_client, docker_launch
from gem_eval.sandbox.policy import memory_bytes

if TYPE_CHECKING:
    from gem_eval.sandbox.docker import DockerSandbox

SIDECAR_LABEL = "gem-eval.sidecar"
"""Label of a sidecar's container: its service name."""
INHIBIT_IPV4 = "com.docker.network.bridge.inhibit_ipv4"
READY_TIMEOUT_S = 300.0
"""The longest a dependency may take to be ready when its health check does not say."""
_POLL_S = 0.25


class Sidecars:
    """The sidecars and network of one sandbox (see the module docstring).

    Args:
        box: The sandbox whose container they serve (its limits, network, run, and its
            ``hostname`` and ``depends_on``).
        specs: The sidecars, their images built.
    """

    def __init__(self, box: DockerSandbox, specs: list[SidecarSpec]) -> None:
        self.box = box
        self.specs = {s.name: s for s in specs}
        self.main = {"main", box.hostname or "main"}
        self.network: str | None = None
        self.containers: dict[str, str] = {}  # name -> container id, in start order
        self._late = _depending_on(self.specs, self.main)

    @property
    def internal(self) -> bool:
        return not self.box.network

    def describe(self) -> dict[str, str]:
        """For the run manifest: each sidecar's image and what the network allows."""
        images = "; ".join(f"{n}: {s.image or s.build}" for n, s in self.specs.items())
        route = "internal, no route out" if self.internal else "bridge, route out"
        return {"sidecars": images, "network": f"private per episode ({route})"}

    async def start_before(self) -> None:
        """Make the network, start the sidecars the container does not come before,
        and wait for those it depends on."""
        self.network = f"gem-eval-{uuid.uuid4().hex[:12]}"
        options = {INHIBIT_IPV4: "true"} if self.internal else {}
        api = docker_client.client().api
        try:
            await self._network(api, options)
        except SandboxError as exc:
            if "address pool" not in str(exc):
                raise
            raise SandboxError(
                f"{exc} (a sandbox with sidecars has a network of its own; `gem-eval sandbox "
                "cleanup` removes those of killed runs)"
            ) from None
        for name in _order(self.specs, exclude=self._late):
            await self._start(self.specs[name])
        await self._wait(self.box.depends_on)

    async def _network(self, api: Any, options: dict[str, str]) -> None:
        await _shielded(
            docker_client.call(
                "creating the sidecars' network",
                api.create_network,
                self.network,
                driver="bridge",
                internal=self.internal,
                options=options,
                labels=cleanup.labels(self.box.run_id),
                check_duplicate=True,
            ),
            lambda _: cleanup.track_network(str(self.network)),
        )

    async def start_after(self) -> None:
        """Start the sidecars that depend on the container (it runs now)."""
        for name in _order(self.specs, exclude=set(self.specs) - self._late):
            await self._start(self.specs[name])

    async def remove(self) -> None:
        """Remove every sidecar, then the network; safe after a failed start."""
        api = docker_client.client().api

        async def remove(container_id: str) -> None:
            try:
                await docker_client.call(
                    "removing a sidecar", api.remove_container, container_id, force=True
                )
            except SandboxError as exc:
                if "gone" not in str(exc):
                    return  # the engine is away: the run's cleanup tries again
            cleanup.untrack(container_id)

        containers, self.containers = self.containers, {}
        await asyncio.gather(*(remove(c) for c in containers.values()))
        network, self.network = self.network, None
        if network is None:
            return
        for attempt in range(5):  # an endpoint may linger a moment after its container
            try:
                await docker_client.call(
                    "removing the sidecars' network", api.remove_network, network
                )
            except SandboxError as exc:
                if "gone" in str(exc):
                    break
                if attempt == 4:
                    return  # the run's cleanup (remove_run) tries again
                await asyncio.sleep(0.2 * (attempt + 1))
            else:
                break
        cleanup.untrack_network(network)

    async def _start(self, spec: SidecarSpec) -> None:
        await self._wait({k: v for k, v in spec.depends_on.items() if k not in self.main})
        if spec.image is None:
            raise SandboxError(f"sidecar {spec.name!r}: its image was not built ({spec.build})")
        container_id = await _shielded(self._create(spec), lambda c: self._made(spec.name, c))
        if spec.files:
            archive = await asyncio.to_thread(_tar_files, spec.files)
            api = docker_client.client().api
            what = f"copying files into sidecar {spec.name!r}"
            if not await docker_client.call(what, api.put_archive, container_id, "/", archive):
                raise SandboxError(f"{what}: Docker refused the archive")
        api = docker_client.client().api
        await docker_client.call(f"starting sidecar {spec.name!r}", api.start, container_id)

    def _made(self, name: str, container_id: str) -> None:
        self.containers[name] = container_id
        cleanup.track(container_id)

    async def _create(self, spec: SidecarSpec) -> str:
        from docker.types import Ulimit

        api = docker_client.client().api
        box = self.box
        memory = box.memory
        if spec.memory and memory_bytes(spec.memory) < memory_bytes(box.memory):
            memory = spec.memory
        fsize = None if box.disk is None else docker_launch.parse_bytes(box.disk)
        host_config = api.create_host_config(
            network_mode=self.network,
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=int(min(spec.cpus or box.cpus, box.cpus) * 1e9),
            pids_limit=min(spec.pids or box.pids, box.pids),
            security_opt=["no-new-privileges"],
            cap_drop=["NET_RAW"] if self.internal else None,
            init=True,
            ulimits=None if fsize is None else [Ulimit(name="fsize", soft=fsize, hard=fsize)],
        )
        endpoint = api.create_endpoint_config(aliases=[spec.name, *spec.aliases])
        health = spec.healthcheck
        made = await docker_client.call(
            f"creating sidecar {spec.name!r} from {spec.image}",
            api.create_container,
            spec.image,
            command=spec.command,
            entrypoint=spec.entrypoint,
            environment=spec.env,
            user=spec.user or "",
            working_dir=spec.workdir,
            hostname=spec.name,
            labels={**cleanup.labels(box.run_id), SIDECAR_LABEL: spec.name},
            host_config=host_config,
            networking_config=api.create_networking_config({self.network: endpoint}),
            healthcheck=None
            if health is None
            else {
                "test": health.test,
                "interval": int(health.interval_s * 1e9),
                "timeout": int(health.timeout_s * 1e9),
                "retries": health.retries,
                "start_period": int(health.start_s * 1e9),
            },
        )
        return str(made["Id"])

    async def _wait(self, depends_on: dict[str, Condition]) -> None:
        for name, condition in depends_on.items():
            if name in self.main:
                continue
            if name not in self.containers:
                raise SandboxError(f"depends on sidecar {name!r}, which did not start")
            await self._ready(name, condition)

    async def _ready(self, name: str, condition: Condition) -> None:
        """Return when sidecar ``name`` meets ``condition``; else raise naming why."""
        api = docker_client.client().api
        container_id = self.containers[name]
        health = self.specs[name].healthcheck
        limit = READY_TIMEOUT_S
        if health is not None and condition == "service_healthy":
            limit = health.start_s + (health.interval_s + health.timeout_s) * (health.retries + 1)
            limit = min(max(limit + 30.0, 60.0), 3600.0)
        deadline = time.monotonic() + limit
        while True:
            info = await docker_client.call(
                f"inspecting sidecar {name!r}", api.inspect_container, container_id
            )
            state = info.get("State") or {}
            status = (state.get("Health") or {}).get("Status")
            if condition == "service_completed_successfully":
                if state.get("Status") == "exited":
                    if state.get("ExitCode") == 0:
                        return
                    raise await self._failed(name, f"exited with code {state.get('ExitCode')}")
            elif not state.get("Running"):
                raise await self._failed(name, f"exited with code {state.get('ExitCode')}")
            elif condition == "service_started":
                return
            elif status is None:
                raise SandboxError(f"sidecar {name!r} must be healthy but has no health check")
            elif status == "healthy":
                return
            elif status == "unhealthy":
                raise await self._failed(name, "is unhealthy", state)
            if time.monotonic() > deadline:
                raise await self._failed(name, f"was not ready within {limit:g} s", state)
            await asyncio.sleep(_POLL_S)

    async def _failed(
        self, name: str, problem: str, state: dict[str, Any] | None = None
    ) -> SandboxError:
        """The error for a sidecar that failed, with its last words (health check
        output, else its log)."""
        checks = ((state or {}).get("Health") or {}).get("Log") or []
        said = str(checks[-1].get("Output", "")) if checks else ""
        if not said.strip():
            api = docker_client.client().api
            with contextlib.suppress(SandboxError):
                logs = await docker_client.call(
                    f"reading sidecar {name!r}'s log", api.logs, self.containers[name], tail=5
                )
                said = logs.decode(errors="replace")
        tail = " / ".join(line.strip() for line in said.splitlines() if line.strip())[-300:]
        return SandboxError(f"sidecar {name!r} {problem}" + (f": {tail}" if tail else ""))


async def _shielded(making: Any, made: Any) -> Any:
    """Await ``making`` (a Docker create); if cancelled meanwhile (Ctrl-C), let it finish
    and hand its result to ``made`` anyway, so what was made is removed with the rest."""
    task = asyncio.ensure_future(making)
    try:
        result = await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            made(await task)
        raise
    made(result)
    return result


def _depending_on(specs: dict[str, SidecarSpec], main: set[str]) -> set[str]:
    """The sidecars that depend, directly or not, on the sandbox's container."""
    late: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, spec in specs.items():
            if name not in late and (set(spec.depends_on) & (main | late)):
                late.add(name)
                changed = True
    return late


def _order(specs: dict[str, SidecarSpec], exclude: set[str]) -> list[str]:
    """The sidecars not in ``exclude``, each after those it depends on."""
    order: list[str] = []
    pending = [n for n in specs if n not in exclude]
    while pending:
        ready = [n for n in pending if not set(specs[n].depends_on) & set(pending)]
        if not ready:
            raise SandboxError(f"sidecars depend on each other in a cycle: {', '.join(pending)}")
        order += ready
        pending = [n for n in pending if n not in ready]
    return order


def _tar_files(files: dict[str, str]) -> bytes:
    """The task's files and directories (``files``: path in the sidecar -> host path)
    as one archive to unpack at ``/``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for target, source in files.items():
            tar.add(Path(source), arcname=target.lstrip("/"))
    return buffer.getvalue()
