"""Finding and removing gem-eval's containers: labels, a live set, and leftovers.

Every container gem-eval starts is labelled ``gem-eval.managed=1`` with the run id, the
host name and the PID of the process that owns it. A process removes its own
containers when it ends normally, on an exception and on Ctrl-C/SIGTERM (the sandboxes'
``close``), and, as a last resort, at interpreter exit (:func:`remove_tracked`). A run
killed with SIGKILL cannot clean up: :func:`remove_leftovers` (``gem-eval sandbox
cleanup``) removes containers whose owning process is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import time
from typing import Any

MANAGED = "gem-eval.managed"
RUN = "gem-eval.run"
HOST = "gem-eval.host"
PID = "gem-eval.pid"
STARTED = "gem-eval.started"

_tracked: set[str] = set()


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
    """Remember a container this process must remove before it exits."""
    if not _tracked:
        atexit.register(remove_tracked)
    _tracked.add(container_id)


def untrack(container_id: str) -> None:
    _tracked.discard(container_id)


def tracked() -> set[str]:
    """Containers this process started and has not removed yet."""
    return set(_tracked)


def remove_tracked() -> int:
    """Remove every container this process still owns (blocking); how many went."""
    from gem_eval.sandbox import docker_client

    removed = 0
    for container_id in list(_tracked):
        with contextlib.suppress(Exception):
            docker_client.client().api.remove_container(container_id, force=True)
            removed += 1
        _tracked.discard(container_id)
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


def remove_leftovers(run_id: str | None = None, include_live: bool = False) -> list[str]:
    """Remove the containers :func:`find` returns; their short ids."""
    removed = []
    for container in find(run_id, include_live):
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(container.short_id)
    return removed
