"""What a sandbox does when something inside its container went wrong.

* A failed call is checked against the container: stopped or gone while the engine
  answers is :class:`~gem_eval.errors.SandboxLostError`; anything else stays the
  :class:`~gem_eval.errors.SandboxError` it was (the engine's failure).
* A fork bomb: when the agent's processes hold every PID the container may have, a
  command cannot start (measured on Docker 20.10, cgroups v1: ``timeout``, which every
  ``exec`` runs under, cannot fork, and about one ``docker exec`` in ten fails inside
  runc). An exec that needs no fork still starts (runc moves the process into the
  container's cgroup, and a move is not refused at the limit), so ``kill -9 -1`` as root
  from a plain ``sh`` (``kill`` is a builtin) ends every process but PID 1 and itself.
  Raising the limit from outside would not help: a tight fork loop takes any new room
  within microseconds. When even that exec cannot start, the container is restarted
  (killed from outside, booted again: its files stay).
"""

from __future__ import annotations

from typing import Any

from gem_eval.errors import SandboxError, SandboxLostError
from gem_eval.sandbox import docker_client
from gem_eval.sandbox.base import ExecResult

KILL_ALL = ["sh", "-c", "for _ in 1 2 3; do kill -9 -1 2>/dev/null; done; exit 0"]
"""Every process but PID 1 and this shell, SIGKILLed, with no fork (kill is a builtin);
thrice, in case one was mid-fork."""
_PIDS_SLACK = 2
_QUOTA_FULL = ("quota exceeded", "no space left on device")


async def inspect(container_id: str) -> dict[str, Any] | None:
    """The container's ``inspect``, ``None`` when it is gone; :class:`SandboxError` when
    the engine cannot be asked."""
    api = docker_client.client().api

    def get() -> dict[str, Any] | None:
        from docker import errors

        try:
            found: dict[str, Any] = api.inspect_container(container_id)
        except errors.NotFound:
            return None
        return found

    return await docker_client.call("checking a container", get)


async def lost_or(exc: SandboxError, container_id: str) -> SandboxError:
    """``exc`` as a :class:`SandboxLostError` when the container stopped or is gone (the
    engine answering), else ``exc`` itself."""
    if isinstance(exc, SandboxLostError):
        return exc
    try:
        info = await inspect(container_id)
    except SandboxError:
        return exc  # the engine does not answer: its failure, not the sandbox's
    if info is None:
        return SandboxLostError(f"{exc}: the container is gone (removed from outside)", "gone")
    state = info.get("State") or {}
    if state.get("Paused"):  # from outside: no process in the container can pause it
        return SandboxError(f"{exc}: the container is paused (from outside the sandbox)")
    if state.get("Running"):
        return exc
    how = f"exit code {state.get('ExitCode')}"
    if state.get("OOMKilled"):
        how += ", killed by the out-of-memory killer"
    return SandboxLostError(f"{exc}: the container stopped ({how})", "stopped")


def disk_full(exc: SandboxError, quota: str | None) -> SandboxError:
    """``exc`` as a :class:`SandboxLostError` when it says the container's disk quota
    ``quota`` is full; without a quota a full disk is the host's (``exc`` itself)."""
    if quota is not None and any(sign in str(exc).lower() for sign in _QUOTA_FULL):
        return SandboxLostError(f"{exc}: the sandbox's disk quota ({quota}) is full", "disk_full")
    return exc


def could_not_start(result: ExecResult) -> bool:
    """Whether an exec's command never ran because nothing could fork."""
    text = result.stdout + result.stderr
    return (result.exit_code == 125 and "fork system call failed" in text) or (
        result.exit_code == 126 and "OCI runtime exec failed" in text
    )


async def pids_exhausted(container_id: str, limit: int) -> bool:
    """Whether the container's processes hold (nearly) every PID it may have."""
    from docker.utils import version_lt

    api = docker_client.client().api
    # one_shot (API 1.41, Docker 20.10) skips the second sample that makes a read ~2 s.
    fast = {} if version_lt(api.api_version, "1.41") else {"one_shot": True}
    stats = await docker_client.call(
        "reading a container's process count", api.stats, container_id, stream=False, **fast
    )
    current = (stats.get("pids_stats") or {}).get("current")
    return isinstance(current, int) and current >= limit - _PIDS_SLACK
