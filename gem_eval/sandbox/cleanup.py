"""Finding and removing gem-eval's containers: labels, a live set, and leftovers.

Every container gem-eval starts is labelled ``gem-eval.managed=1`` with the run id, the
host name and the PID of the process that owns it; so is every network it makes (the
private network of a sandbox with sidecars, :mod:`gem_eval.sandbox.docker_sidecars`),
and each step below removes those networks after the containers. A process removes its own
containers when it ends normally, on an exception and on Ctrl-C/SIGTERM (the sandboxes'
``close``), and, as a last resort, at interpreter exit (:func:`remove_tracked`). Before
a run ends, :func:`remove_run` removes whatever still carries its label, found through
the engine rather than this process's memory (containers whose removal failed while the
engine was away, for one), waiting a while for an absent engine. A run killed with
SIGKILL cannot clean up: :func:`remove_leftovers` and :func:`remove_leftover_networks`
(``gem-eval sandbox cleanup``) remove what belongs to a process that is gone.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import socket
import time
from typing import Any

from gem_eval.errors import SandboxError

MANAGED = "gem-eval.managed"
RUN = "gem-eval.run"
HOST = "gem-eval.host"
PID = "gem-eval.pid"
STARTED = "gem-eval.started"
WAIT_VAR = "GEM_EVAL_CLEANUP_WAIT_S"
DEFAULT_WAIT_S = 60.0

log = logging.getLogger("gem_eval.sandbox")

_tracked: set[str] = set()
_networks: set[str] = set()
_at_exit = False  # remove_tracked is registered to run at exit


def labels(run_id: str | None) -> dict[str, str]:
    """The labels a new container carries."""
    out = {
        MANAGED: "1",
        HOST: socket.gethostname(),
        PID: str(os.getpid()),
        STARTED: str(int(time.time())),
    }
    if run_id:
        out[RUN] = run_id
    return out


def track(container_id: str) -> None:
    """Remember a container this process must remove before it exits (and watch the
    engine while there are such containers: see :func:`gem_eval.sandbox.engine.watch`)."""
    from gem_eval.sandbox import engine

    global _at_exit
    if not _at_exit:
        _at_exit = bool(atexit.register(remove_tracked))
    _tracked.add(container_id)
    engine.watch(lambda: bool(_tracked))


def untrack(container_id: str) -> None:
    _tracked.discard(container_id)


def track_network(network: str) -> None:
    """Remember a network this process must remove before it exits (after its
    containers)."""
    global _at_exit
    if not _at_exit:
        _at_exit = bool(atexit.register(remove_tracked))
    _networks.add(network)


def untrack_network(network: str) -> None:
    _networks.discard(network)


def tracked() -> set[str]:
    """Containers this process started and has not removed yet."""
    return set(_tracked)


def remove_tracked() -> int:
    """Remove every container this process still owns, then its networks (blocking);
    how many containers went.

    Nothing is tried while the engine is known to be away (each call could block)."""
    from gem_eval.sandbox import docker_client, engine

    if engine.is_down():
        return 0
    removed = 0
    for container_id in list(_tracked):
        with contextlib.suppress(Exception):
            docker_client.client().api.remove_container(container_id, force=True)
            removed += 1
        _tracked.discard(container_id)
    for network in list(_networks):
        with contextlib.suppress(Exception):
            docker_client.client().api.remove_network(network)
        _networks.discard(network)
    return removed


def _owner_alive(container_labels: dict[str, str]) -> bool:
    if container_labels.get(HOST) != socket.gethostname():
        return True  # another machine's process: we cannot tell, so keep it
    try:
        pid = int(container_labels.get(PID, ""))
    except ValueError:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find(run_id: str | None = None, include_live: bool = False) -> list[Any]:
    """gem-eval's containers: those of ``run_id`` (all runs when ``None``), and only
    those whose owning process is gone unless ``include_live``."""
    from gem_eval.sandbox import docker_client

    wanted = [f"{MANAGED}=1"] + ([f"{RUN}={run_id}"] if run_id else [])
    # ignore_removed: a container removed between the listing and its inspection is
    # simply not there (a run removing its own containers races this).
    listing = docker_client.client().containers.list
    containers = listing(all=True, filters={"label": wanted}, ignore_removed=True)
    return [c for c in containers if include_live or not _owner_alive(c.labels)]


def find_networks(run_id: str | None = None, include_live: bool = False) -> list[Any]:
    """gem-eval's networks, chosen as :func:`find` chooses containers."""
    from gem_eval.sandbox import docker_client

    wanted = [f"{MANAGED}=1"] + ([f"{RUN}={run_id}"] if run_id else [])
    networks = docker_client.client().networks.list(filters={"label": wanted})
    return [n for n in networks if include_live or not _owner_alive(n.attrs.get("Labels") or {})]


def remove_leftovers(run_id: str | None = None, include_live: bool = False) -> list[str]:
    """Remove the containers :func:`find` returns; their short ids (their networks go
    with :func:`remove_leftover_networks`, called after)."""
    removed = []
    for container in find(run_id, include_live):
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(container.short_id)
    return removed


def remove_leftover_networks(run_id: str | None = None, include_live: bool = False) -> list[str]:
    """Remove the networks :func:`find_networks` returns (once their containers are
    gone: a network in use stays); their short ids."""
    removed = []
    for network in find_networks(run_id, include_live):
        with contextlib.suppress(Exception):
            network.remove()
            removed.append(network.short_id)
    return removed


async def remove_run(run_id: str, wait_s: float | None = None) -> list[str]:
    """Remove every container labelled with ``run_id`` (except those of another live
    process resuming the same run); their short ids.

    The engine is asked, not this process's memory. If it is away, this waits for it
    up to ``wait_s`` seconds (``GEM_EVAL_CLEANUP_WAIT_S``, 60 by default); if it does
    not return, one warning on the ``gem_eval.sandbox`` logger names the command that
    removes the leftovers later. A process that never talked to Docker does nothing.
    """
    from gem_eval.sandbox import docker_client, engine

    if not docker_client.in_use():
        return []
    if wait_s is None:
        wait_s = engine.seconds_from_env(WAIT_VAR, DEFAULT_WAIT_S)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return await _remove_labelled(run_id)
        except SandboxError as exc:
            if not engine.is_down():
                problem = str(exc)
                break
        if not await engine.wait_until(deadline):
            problem = f"the Docker engine did not come back within {wait_s:g} s"
            break
    log.warning(
        "%s: containers of run %s may remain; remove them with `gem-eval sandbox cleanup --run %s`",
        problem,
        run_id,
        run_id,
    )
    return []


async def _remove_labelled(run_id: str) -> list[str]:
    from gem_eval.sandbox import docker_client

    docker = docker_client.client()
    wanted = [f"{MANAGED}=1", f"{RUN}={run_id}"]
    found = await docker_client.call(
        f"listing the containers of run {run_id}",
        docker.api.containers,
        all=True,
        filters={"label": wanted},
    )
    # Another live process may be resuming the same run: its containers are its own.
    mine = [c for c in found if _own(c) or not _owner_alive(c.get("Labels") or {})]

    async def remove(container_id: str) -> str:
        try:
            await docker_client.call(
                "removing a container", docker.api.remove_container, container_id, force=True
            )
        except SandboxError as exc:
            # Removed meanwhile, or being removed: fine.
            if "gone" not in str(exc) and "in progress" not in str(exc):
                raise
        untrack(container_id)
        return container_id[:12]

    results = await asyncio.gather(*(remove(c["Id"]) for c in mine), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if isinstance(r, str)] + await _remove_networks(run_id)


async def _remove_networks(run_id: str) -> list[str]:
    """Remove the networks labelled with ``run_id`` (as :func:`_remove_labelled` does
    containers: not another live process's); their short ids."""
    from gem_eval.sandbox import docker_client

    api = docker_client.client().api
    wanted = [f"{MANAGED}=1", f"{RUN}={run_id}"]
    found = await docker_client.call(
        f"listing the networks of run {run_id}", api.networks, filters={"label": wanted}
    )
    removed = []
    for network in found:
        if not (_own(network) or not _owner_alive(network.get("Labels") or {})):
            continue
        try:
            await docker_client.call("removing a network", api.remove_network, network["Id"])
        except SandboxError as exc:
            if "gone" not in str(exc):
                raise
        untrack_network(network["Name"])
        untrack_network(network["Id"])
        removed.append(network["Id"][:12])
    return removed


def _own(container: dict[str, Any]) -> bool:
    labels = container.get("Labels") or {}
    return labels.get(HOST) == socket.gethostname() and labels.get(PID) == str(os.getpid())
