"""How a sandbox's container is made and started: its PID 1, limits and disk quota.

The container is created stopped, gets its keep-alive (``/.gem-eval-init``, see
:mod:`gem_eval.sandbox.container_init`) by ``put_archive``, then starts. Besides the
limits the caller names, it gets:

* ``/proc/1`` mounted read-only (with Docker's default read-only ``/proc`` paths): root
  in the container could otherwise raise PID 1's ``oom_score_adj`` and have the
  out-of-memory killer end the container. The agent cannot unmount it (no
  ``CAP_SYS_ADMIN``).
* SIGTERM as its stop signal and a 2-second stop timeout, whatever the image says.
* a disk quota (``disk``), where the engine supports one. Docker offers only
  ``storage_opt size``, which overlay2 honours on xfs mounted with ``pquota`` (and
  btrfs, zfs, devicemapper, each its own way). Whether it works is learnt from the
  engine's answer to the first container asking for it (remembered per process). Where
  it does not (overlay2 on ext4: the common case, and this project's machines; this
  kernel also lacks XFS quota support), nothing bounds the writable layer: a root agent
  can fill the disk that holds Docker's data root, which then fails every other
  container and the results store on that disk too. There, each file is capped at
  ``disk`` instead (``RLIMIT_FSIZE``, which root in the container cannot raise without
  ``CAP_SYS_RESOURCE``): one huge file stops, many files do not (measured with
  ``disk="50m"``: an 80 MB ``dd`` stopped at 50 MB; 50 files of 40 MB, 2 GB, were
  written in 3 s).
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gem_eval.errors import SandboxError
from gem_eval.sandbox import container_init, docker_client

if TYPE_CHECKING:
    from gem_eval.sandbox.docker import DockerSandbox

READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
"""Docker's default read-only paths (a create request naming any replaces them all)."""
STOP_TIMEOUT_S = 2
_QUOTA_COUNTS_IMAGE = {"btrfs", "devicemapper"}  # their size covers the image's files too
_QUOTA_REFUSED = re.compile(r"storage.?opt|quota", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


@dataclass
class Engine:
    """What this process learnt about the Docker engine (asked once).

    Attributes:
        os: ``linux`` (the engine's, not this machine's).
        arch: ``amd64``, ``arm64``...
        driver: The storage driver (``overlay2``...).
        quota: Whether ``storage_opt size`` works; ``None`` until a container asked.
    """

    os: str
    arch: str
    driver: str
    quota: bool | None = None


@dataclass
class Launched:
    """A created container and how it was set up.

    Attributes:
        id: The container's ID.
        init: ``"gem-eval-init"`` or ``"sh"`` (see :mod:`gem_eval.sandbox.container_init`).
        disk: ``"quota"`` (the writable layer is bounded), ``"per-file"`` (each file is)
            or ``"none"``.
    """

    id: str
    init: str
    disk: str


_lock = threading.Lock()
_engine: Engine | None = None
_image_sizes: dict[str, int] = {}


def parse_bytes(size: str) -> int:
    """``"10g"`` -> bytes (binary units, as Docker reads them)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*", size.lower())
    if match is None:
        raise ValueError(f"not a size: {size!r} (try 10g, 512m)")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


async def engine() -> Engine:
    """The engine's OS, architecture and storage driver (asked once per process)."""
    global _engine
    if _engine is None:
        api = docker_client.client().api
        version = await docker_client.call("asking the engine its version", api.version)
        info = await docker_client.call("asking the engine its storage driver", api.info)
        with _lock:
            if _engine is None:
                _engine = Engine(
                    str(version.get("Os", "")), str(version.get("Arch", "")), info["Driver"]
                )
    return _engine


async def create(box: DockerSandbox, labels: dict[str, str]) -> Launched:
    """Create ``box``'s container (not started); see the module docstring."""
    found = await engine()
    binary = await asyncio.to_thread(container_init.binary, found.os, found.arch)
    init = "gem-eval-init" if binary is not None else "sh"
    quota_bytes = None if box.disk is None else await _quota_bytes(box, found)
    if quota_bytes is not None and found.quota is not False:
        try:
            made = await _create(box, labels, binary, storage_opt={"size": str(quota_bytes)})
        except SandboxError as exc:
            if not _QUOTA_REFUSED.search(str(exc)):
                raise
            found.quota = False  # e.g. overlay2 on ext4: ask no more
        else:
            found.quota = True
            return Launched(made, init, "quota")
    if box.disk is None:
        return Launched(await _create(box, labels, binary), init, "none")
    return Launched(
        await _create(box, labels, binary, fsize=parse_bytes(box.disk)), init, "per-file"
    )


async def boot(box: DockerSandbox, container_id: str) -> None:
    """Copy the keep-alive in (when it is a binary) and start the container."""
    api = docker_client.client().api
    found = await engine()
    binary = await asyncio.to_thread(container_init.binary, found.os, found.arch)
    if binary is not None:
        tar = container_init.archive(binary)
        if not await docker_client.call(
            "copying the init in", api.put_archive, container_id, "/", tar
        ):
            raise SandboxError("copying the init in: Docker refused the archive")
    await docker_client.call(f"starting a container from {box.image}", api.start, container_id)


async def restart(box: DockerSandbox, container_id: str) -> None:
    """Kill the container from outside (every process in it ends; its files stay) and
    boot it again, with a fresh copy of the keep-alive (the agent may have replaced it)."""
    api = docker_client.client().api
    await docker_client.call("restarting a container", api.kill, container_id)
    await docker_client.call("restarting a container", api.wait, container_id, timeout=60)
    await boot(box, container_id)


async def _quota_bytes(box: DockerSandbox, found: Engine) -> int:
    assert box.disk is not None
    size = parse_bytes(box.disk)
    if found.driver in _QUOTA_COUNTS_IMAGE and found.quota is not False:
        if box.image not in _image_sizes:
            api = docker_client.client().api
            image = await docker_client.call(
                f"inspecting {box.image}", api.inspect_image, box.image
            )
            _image_sizes[box.image] = int(image.get("Size") or 0)
        size += _image_sizes[box.image]
    return size


async def _create(
    box: DockerSandbox,
    labels: dict[str, str],
    binary: bytes | None,
    *,
    storage_opt: dict[str, str] | None = None,
    fsize: int | None = None,
) -> str:
    from docker.types import Mount, Ulimit

    api = docker_client.client().api
    sidecars = box.network_name  # beside sidecars: their private network, under its name
    # An agent program's container without the network: the run's endpoint network
    # instead of none (beside sidecars: as a second network, joined before it starts).
    endpoint = box.endpoint_network.name if box.endpoint_network and not box.network else None
    network = sidecars or endpoint
    host_config: dict[str, Any] = api.create_host_config(
        network_mode=network or ("bridge" if box.network else "none"),
        cap_drop=["NET_RAW"] if network and not box.network else None,
        # Docker's DNS answers no outside name there, and by default lets a lookup wait
        # 10 s for it (agents look up telemetry and update hosts): one second.
        dns_opt=["timeout:1", "attempts:1"] if endpoint is not None else None,
        mem_limit=box.memory,
        memswap_limit=box.memory,
        nano_cpus=int(box.cpus * 1e9),
        pids_limit=box.pids,
        security_opt=["no-new-privileges"],
        storage_opt=storage_opt,
        ulimits=None if fsize is None else [Ulimit(name="fsize", soft=fsize, hard=fsize)],
        mounts=[
            Mount(target, source, type="bind", read_only=True)
            for target, source in box.mounts.items()
        ]
        or None,
    )
    host_config["ReadonlyPaths"] = [*READONLY_PATHS, "/proc/1"]
    entrypoint = [container_init.PATH] if binary else ["/bin/sh", "-c", container_init.SHELL_SCRIPT]
    made = await docker_client.call(
        f"creating a container from {box.image}",
        api.create_container,
        box.image,
        command=[],
        entrypoint=entrypoint,
        user="root",
        working_dir="/",
        environment=box.env,
        labels=labels,
        host_config=host_config,
        networking_config=None
        if network is None
        else api.create_networking_config(
            {network: api.create_endpoint_config(aliases=[box.hostname or "main"])}
        ),
        stop_signal="SIGTERM",
        stop_timeout=STOP_TIMEOUT_S,
    )
    if sidecars is not None and endpoint is not None:
        what = "joining the endpoint network"
        await docker_client.call(what, api.connect_container_to_network, made["Id"], endpoint)
    return str(made["Id"])
