"""The Docker engine as this process saw it: up, away, and how long to wait for it.

A daemon restart mid-run kills the containers (unless it runs with ``live-restore``)
and refuses calls until it is back. A call that cannot reach it marks it down
(:func:`mark_down`); a new sandbox then waits for it (:func:`gate`) instead of failing
at once, for ``GEM_EVAL_ENGINE_WAIT_S`` seconds (120 by default) counted from when it
went away, so a run whose engine never returns still ends soon after. The state
changes and the wait are reported on the ``gem_eval.sandbox`` logger (library code
does not print; the CLI shows these lines). :func:`outages` counts the times it went
away: a sandbox started before the latest one has lost its container.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable

from gem_eval.errors import SandboxError

WAIT_VAR = "GEM_EVAL_ENGINE_WAIT_S"
DEFAULT_WAIT_S = 120.0
UNREACHABLE = "the Docker engine is unreachable"
_POLL_S = 0.5
_REPORT_EVERY_S = 10.0
_WATCH_S = 1.0

log = logging.getLogger("gem_eval.sandbox")

_lock = threading.Lock()
_down_since: float | None = None
_outages = 0
_reported = 0.0  # when the last "still waiting" line went out
_gave_up = False  # the gate's bound passed in this outage (said once)
_watcher: threading.Thread | None = None


def wait_limit() -> float:
    """Seconds new sandboxes wait for an absent engine (``GEM_EVAL_ENGINE_WAIT_S``)."""
    return seconds_from_env(WAIT_VAR, DEFAULT_WAIT_S)


def seconds_from_env(name: str, default: float) -> float:
    """A non-negative number of seconds from the variable ``name``, else ``default``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        log.warning("%s=%r is not a number of seconds: using %g", name, text, default)
        return default
    return value


def is_down() -> bool:
    """Whether the engine was last seen unreachable."""
    return _down_since is not None


def outages() -> int:
    """How many times this process saw the engine go away."""
    return _outages


def mark_down() -> None:
    """Record that the engine did not answer (a new outage if it was up)."""
    global _down_since, _outages, _reported, _gave_up
    with _lock:
        if _down_since is not None:
            return
        _down_since = _reported = time.monotonic()
        _outages += 1
        _gave_up = False
    log.warning(
        "%s: new sandboxes wait up to %g s for it to return (%s)",
        UNREACHABLE,
        wait_limit(),
        WAIT_VAR,
    )


def mark_up() -> None:
    """Record that the engine answered."""
    global _down_since
    with _lock:
        if _down_since is None:
            return
        away, _down_since = time.monotonic() - _down_since, None
    log.warning("the Docker engine is back after %.0f s", away)


def watch(while_: Callable[[], bool]) -> None:
    """Ping the engine every second, in a daemon thread, as long as ``while_()`` holds
    (the process owns containers): an outage is seen even when no call happens to
    fall in it (every episode waiting for its model), so :func:`outages` counts it."""
    global _watcher
    with _lock:
        if _watcher is not None and _watcher.is_alive():
            return
        _watcher = threading.Thread(
            target=_watch, args=(while_,), name="gem-eval-engine-watch", daemon=True
        )
        _watcher.start()


def _watch(while_: Callable[[], bool]) -> None:
    from gem_eval.sandbox import docker_client

    while True:
        time.sleep(_WATCH_S)
        if not while_():
            return
        if docker_client.ping():
            mark_up()
        else:
            mark_down()


async def probe() -> bool:
    """Ping the engine now (two seconds at most) and record the answer."""
    from gem_eval.sandbox import docker_client

    alive = await docker_client.in_thread(docker_client.ping)
    if alive:
        mark_up()
    else:
        mark_down()
    return alive


async def gate() -> None:
    """Return at once while the engine is up; while it is away, wait for it.

    Raises:
        SandboxError: The engine has been away for :func:`wait_limit` seconds in all
            (then every later sandbox of this outage fails after one ping).
    """
    global _gave_up
    since = _down_since
    if since is None:
        return
    limit = wait_limit()
    if await wait_until(since + limit):
        return
    with _lock:
        first, _gave_up = not _gave_up, True
    if first:
        log.warning(
            "the Docker engine did not come back within %g s: episodes that need a new "
            "sandbox fail (infra_error; --resume plays them again)",
            limit,
        )
    raise SandboxError(f"{UNREACHABLE} (away for over {limit:g} s, the {WAIT_VAR} bound)")


async def wait_until(deadline: float) -> bool:
    """Ping until the engine answers or ``deadline`` (``time.monotonic``) passes, with
    a progress line every ten seconds; whether it answered."""
    global _reported
    while True:
        if await probe():
            return True
        now = time.monotonic()
        if now >= deadline:
            return False
        with _lock:
            since = _down_since
            due = since is not None and now - _reported >= _REPORT_EVERY_S
            if due:
                _reported = now
        if due and since is not None:
            left = max(0.0, deadline - now)
            log.warning(
                "waiting for the Docker engine: away %.0f s, waiting %.0f s more", now - since, left
            )
        await asyncio.sleep(min(_POLL_S, max(0.0, deadline - now)))
