"""Where an episode's time goes: its phases, timed where they happen.

An episode's executor opens a :class:`PhaseClock` for it (:func:`clocked`); code deep in
the episode (the provisioner, a hosted env's set-up and grading, an installed agent's
install) marks its part with :func:`phase`. The clock rides in a context variable, which
asyncio copies into the episode's tasks and ``to_thread`` calls, so nothing is threaded
through the calls; outside an episode :func:`phase` times nothing.

The phases, in an episode's order (each in seconds of wall time; ``agent`` is what is left
of the agent's part once the grading inside it is taken out):

* ``sandbox_wait``: waiting for a sandbox slot (the run's limit), not work;
* ``sandbox_start``: starting the sandbox (a container, its sidecars);
* ``setup``: the env's set-up in it (a terminal task's toolchain record) and its tools;
* ``agent_setup``: installing an installed agent in the sandbox;
* ``agent``: the agent's turns: model calls and its commands;
* ``verifier``: the task's tests (grading);
* ``audit``: grading integrity: the toolchain check and the traced test run's findings;
* ``teardown``: stopping the tools and removing the sandbox;
* ``judge``: a model judge's grading (``scorer: judge``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar

PHASES = (
    "sandbox_wait",
    "sandbox_start",
    "setup",
    "agent_setup",
    "agent",
    "verifier",
    "audit",
    "teardown",
    "judge",
)
"""The phases, in an episode's order."""
WORK_PHASES = tuple(p for p in PHASES if p != "sandbox_wait")
"""The phases that are work (a wait for a slot is not)."""


class PhaseClock:
    """The seconds spent in each phase of one episode (thread-safe)."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    def total(self) -> float:
        with self._lock:
            return sum(self._seconds.values())

    def seconds(self) -> dict[str, float]:
        """The phases timed, in :data:`PHASES` order, rounded to milliseconds."""
        with self._lock:
            return {p: round(self._seconds[p], 3) for p in PHASES if p in self._seconds}


_clock: ContextVar[PhaseClock | None] = ContextVar("gem_eval_phase_clock", default=None)


@contextlib.contextmanager
def clocked() -> Iterator[PhaseClock]:
    """Time the phases of the episode played inside the block."""
    clock = PhaseClock()
    token = _clock.set(clock)
    try:
        yield clock
    finally:
        _clock.reset(token)


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the block's wall time in phase ``name`` of the episode being played."""
    clock = _clock.get()
    if clock is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        clock.add(name, time.perf_counter() - started)


@contextlib.contextmanager
def remainder(name: str) -> Iterator[None]:
    """Count in phase ``name`` the block's wall time less the phases timed inside it
    (the agent's turns, less the grading and set-up they wait on)."""
    clock = _clock.get()
    if clock is None:
        yield
        return
    started, inner = time.perf_counter(), clock.total()
    try:
        yield
    finally:
        clock.add(name, max(0.0, time.perf_counter() - started - (clock.total() - inner)))


def current() -> PhaseClock | None:
    """The clock of the episode being played (``None`` outside one)."""
    return _clock.get()


def mean_phases(timings: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """The mean seconds of each phase over the episodes that timed any (an episode that
    did not go through a phase counts 0 in it), in :data:`PHASES` order."""
    timed = [t for t in timings if t]
    if not timed:
        return {}
    seen = {p for t in timed for p in t}
    return {p: sum(t.get(p, 0.0) for t in timed) / len(timed) for p in PHASES if p in seen}


def phases_line(means: Mapping[str, float]) -> str:
    """``sandbox_start 1.50 s, setup 0.20 s, agent 0.81 s ...`` (phases of 0 left out)."""
    return ", ".join(f"{p} {s:.2f} s" for p, s in means.items() if round(s, 2) > 0)
