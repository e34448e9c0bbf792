"""``HostCapacity``: how many sandboxes this host holds at once, and the gate each start passes.

Every sandbox a run starts (warm ones included) first takes a place here, and gives it
back once removed. The number of places adapts to the host instead of being fixed:

``memory``
    Each sandbox counts at its declared limit (``sandbox.memory``, times one plus its
    sidecars): the sandboxes' limits, added up, must fit in what was free before the
    first of them started (or since, when more is free while they run), less a reserve
    (a tenth of the memory, at most 1 GiB); and
    what is free now must still hold one more at its limit plus the reserve (other
    programs grow too). Free memory is read again before every start, and a start that
    does not fit waits (it does not fail) until sandboxes are removed or memory frees.
    The declared limit is the bound a sandbox can be held to; what it really uses is
    usually less, so this errs on the safe side.
``cpu``
    The sandboxes' declared CPUs add up to at most four times the CPUs we may use: an
    agent's sandbox is idle while the model thinks, most of each turn, so a few times
    the cores keeps them busy without a run queue that slows every command.
``engine errors``
    A start that fails for want of resources (the engine could not allocate memory,
    fork, or write: see :func:`is_resource_error`) halves the number of places (once
    for the starts that were under way together); each run of that many starts that
    succeed adds one back, until another limit binds again.
``max_sandboxes``
    The user's ceiling (``sandbox.max_sandboxes``), never exceeded.

One sandbox may always start when none of ours is alive (or only those a task keeps for
the whole run, see :meth:`HostCapacity.hold`): a run on a host too small for
one sandbox at its declared limit plays its episodes one at a time (what a sandbox really
uses is usually far less) instead of waiting for ever.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gem_eval.records import SandboxSpec
from gem_eval.sandbox.host import HostReader, Memory
from gem_eval.sandbox.policy import memory_bytes

GIB = 2**30

T = TypeVar("T")

_RESOURCE_ERRNOS = frozenset({errno.ENOMEM, errno.ENOSPC, errno.EAGAIN, errno.EMFILE, errno.ENFILE})
_RESOURCE_TEXT = re.compile(
    r"cannot allocate memory|out of memory|\boom|no space left|resource temporarily "
    r"unavailable|cannot fork|fork: retry|too many open files|memory exhausted",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CapacitySnapshot:
    """The gate's state, for the progress display and the manifest.

    Attributes:
        live: Sandboxes started or starting, not yet removed.
        limit: How many may be alive at once now.
        reason: The limit that binds: ``memory``, ``cpu``, ``engine errors`` or
            ``max_sandboxes``.
        waiting: Starts waiting for a place.
        available: Memory free for us now (bytes), ``None`` when unknown.
        reserve: Memory never handed to sandboxes (bytes).
    """

    live: int
    limit: int
    reason: str
    waiting: int = 0
    available: int | None = None
    reserve: int = 0

    def __str__(self) -> str:
        text = f"sandboxes {self.live}/{self.limit} ({self.reason})"
        return f"{text}, {self.waiting} waiting" if self.waiting else text


Listener = Callable[[CapacitySnapshot], None]


class HostCapacity:
    """The places for sandboxes on this host (see the module docstring).

    Args:
        host: Reads free memory and CPUs (default: this machine's).
        reserve: Memory (bytes) left to everything else (default: a tenth, at most 1 GiB).
        cpu_factor: Declared sandbox CPUs allowed per CPU of ours.
        ceiling: The user's most sandboxes alive at once (``None``: no ceiling).
        poll_s: How often a start waiting for memory reads free memory again.
    """

    def __init__(
        self,
        host: HostReader | None = None,
        *,
        reserve: int | None = None,
        cpu_factor: float = 4.0,
        ceiling: int | None = None,
        poll_s: float = 0.5,
    ) -> None:
        self.host = host or HostReader()
        self.cpu_factor, self.ceiling, self.poll_s = cpu_factor, ceiling, poll_s
        self._reserve = reserve
        self._cores: float | None = None
        self.live = self.peak = 0
        self._held = 0  # of them, counted by hold()
        self._memory, self._cpus = 0, 0.0  # declared, of the live sandboxes
        self._baseline: int | None = None  # free memory when none of ours was alive
        self._need = (GIB, 1.0)  # the last start's size: what the shown limit counts in
        self._adaptive: int | None = None
        self._successes = self.decreases = 0
        self._queue: collections.deque[object] = collections.deque()
        self._changed = asyncio.Event()
        self._listeners: list[Listener] = []
        self._idle: list[Callable[[], bool]] = []
        self._ceilings: dict[str, int | None] = {}

    # -- the gate -----------------------------------------------------------------------

    async def acquire(self, memory: int, cpus: float = 1.0) -> None:
        """Take a place for a sandbox of ``memory`` bytes and ``cpus`` CPUs; wait (first
        come, first served) until one fits."""
        self._need = (memory, cpus)
        ticket = object()
        self._queue.append(ticket)
        try:
            while True:
                blocker = None
                if self._queue[0] is ticket:
                    blocker = self._blocker(memory, cpus)
                    if blocker is None:
                        self._take(memory, cpus)
                        return
                    self._shed_idle()
                self._notify()
                changed = self._changed
                timeout = self.poll_s if blocker == "memory" else None
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout)
        finally:
            self._queue.remove(ticket)
            self._signal()

    def try_acquire(self, memory: int, cpus: float = 1.0) -> bool:
        """Take a place only if one is free now and no start waits (a warm start ahead
        of need must not take it from one that is needed)."""
        if self._queue or self._blocker(memory, cpus) is not None:
            return False
        self._need = (memory, cpus)
        self._take(memory, cpus)
        return True

    def hold(self, memory: int, cpus: float = 1.0) -> None:
        """Count a sandbox that starts without waiting: one a task's episodes share for
        the whole run gives its place back only at the end, so waiting for a place
        could wait for ever. Held ones count for memory and CPUs, not against the
        ceiling, and with only held ones alive one more may always start."""
        self._held += 1
        self._take(memory, cpus)

    def release(self, memory: int, cpus: float = 1.0, *, held: bool = False) -> None:
        """Give back the place of a removed sandbox (or of a start that failed);
        ``held``: one counted by :meth:`hold`."""
        self._held -= held
        self.live -= 1
        self._memory -= memory
        self._cpus = max(0.0, self._cpus - cpus)
        self._signal()
        self._notify()

    async def started(
        self, start: Awaitable[T], memory: int, cpus: float = 1.0, *, held: bool = False
    ) -> T:
        """Await the ``start`` of a sandbox that holds its place: one that fails gives
        the place back (a resource error lowers the limit), one that works may raise it."""
        try:
            result = await start
        except BaseException as exc:
            if isinstance(exc, Exception):
                self.failed(exc)
            self.release(memory, cpus, held=held)
            raise
        self.succeeded()
        return result

    def set_ceiling(self, key: str, max_sandboxes: int | None) -> None:
        """Count the ``max_sandboxes`` of a limit (a pool, or the pools that share one)
        in the ceiling: their sum when every limit has one (the user asked for no more),
        else none."""
        self._ceilings[key] = max_sandboxes
        given = [n for n in self._ceilings.values() if n is not None]
        self.ceiling = sum(given) if len(given) == len(self._ceilings) else None

    def failed(self, exc: BaseException) -> bool:
        """Hear that a start (holding its place still) failed; a resource error halves
        the places. Whether it was one."""
        if not is_resource_error(exc):
            return False
        if self._adaptive is not None and self.live > self._adaptive:
            return True  # begun before the last decrease, which it is part of
        self._adaptive = max(1, min(self.live, self._adaptive or self.live) // 2)
        self._successes = 0
        self.decreases += 1
        self._notify()
        return True

    def succeeded(self) -> None:
        """Hear that a start succeeded: after a decrease, every ``limit`` of them add one
        place, until another limit binds and the engine's is dropped."""
        if self._adaptive is None:
            return
        self._successes += 1
        if self._successes >= self._adaptive:
            self._adaptive, self._successes = self._adaptive + 1, 0
            others = self._limits(self.host.memory(), with_adaptive=False)
            if others and self._adaptive > min(others.values()):
                self._adaptive = None
            self._signal()
            self._notify()

    # -- what others see ----------------------------------------------------------------

    def snapshot(self) -> CapacitySnapshot:
        """The places now, in sandboxes of the last size asked for."""
        memory = self.host.memory()
        limits = self._limits(memory)
        reason = min(limits, key=lambda k: limits[k])
        return CapacitySnapshot(
            live=self.live,
            limit=limits.get(reason, 1),
            reason=reason,
            waiting=len(self._queue),
            available=None if memory is None else memory.available,
            reserve=self._reserve_bytes(),
        )

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` with a snapshot whenever a place is taken or given back,
        a start waits, or the limit changes."""
        self._listeners.append(listener)

    def on_short(self, shed: Callable[[], bool]) -> None:
        """Register a way to remove an idle sandbox (a pool's warm one), called while
        a start waits; it returns whether it removed one."""
        self._idle.append(shed)

    def describe(self) -> dict[str, Any]:
        """The limit, what binds it and the most alive at once, for the manifest."""
        now = self.snapshot()
        return {
            "limit": now.limit,
            "reason": now.reason,
            "peak_live": self.peak,
            "cpus": self._cores_now(),
            "memory_available": now.available,
            "memory_reserve": now.reserve,
            "engine_decreases": self.decreases,
        }

    # -- inside ---------------------------------------------------------------------------

    def _blocker(self, memory: int, cpus: float) -> str | None:
        """The limit one more sandbox would break, or ``None`` when it fits."""
        if self.live == self._held:  # a run always makes progress (see the module docstring)
            return None
        if self.ceiling is not None and self.live - self._held >= self.ceiling:
            return "max_sandboxes"
        if self._adaptive is not None and self.live >= self._adaptive:
            return "engine errors"
        if self._cpus + cpus > self.cpu_factor * self._cores_now():
            return "cpu"
        budget = self._budget(self.host.memory())
        if budget is not None and self._memory + memory > budget:
            return "memory"
        return None

    def _limits(self, reading: Memory | None, with_adaptive: bool = True) -> dict[str, int]:
        """How many sandboxes of the last size each limit allows, this moment."""
        memory, cpus = self._need
        out: dict[str, int] = {}
        if self.ceiling is not None:
            out["max_sandboxes"] = self.ceiling
        if with_adaptive and self._adaptive is not None:
            out["engine errors"] = self._adaptive
        spare_cpus = self.cpu_factor * self._cores_now() - self._cpus
        out["cpu"] = max(1, self.live + int(spare_cpus // max(cpus, 1e-3)))
        budget = self._budget(reading)
        if budget is not None and memory > 0:
            out["memory"] = max(1, self.live + max(0, budget - self._memory) // memory)
        return out

    def _budget(self, memory: Memory | None) -> int | None:
        """Declared memory the live sandboxes may add up to, by the reading ``memory``
        (``None``: unknown)."""
        if memory is None:
            return None
        if self._memory == 0 or self._baseline is None:  # none of ours alive: exact
            self._baseline = memory.available
        else:  # free now, ours running, is at most what would be free without them
            self._baseline = max(self._baseline, memory.available)
        return min(self._baseline, memory.available + self._memory) - self._reserve_bytes()

    def _reserve_bytes(self) -> int:
        if self._reserve is None:  # the total does not change: read it once
            memory = self.host.memory()
            self._reserve = GIB if memory is None else min(GIB, memory.total // 10)
        return self._reserve

    def _cores_now(self) -> float:
        if self._cores is None:
            self._cores = self.host.cpus()
        return self._cores

    def _take(self, memory: int, cpus: float) -> None:
        self.live += 1
        self.peak = max(self.peak, self.live)
        self._memory += memory
        self._cpus += cpus
        self._notify()

    def _shed_idle(self) -> None:
        for shed in self._idle:
            if shed():
                return

    def _signal(self) -> None:
        """Wake the starts that wait: a place may have freed."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _notify(self) -> None:
        if not self._listeners:
            return
        now = self.snapshot()
        for listener in self._listeners:
            # A display that fails must not fail the sandbox start that told it.
            with contextlib.suppress(Exception):
                listener(now)


def footprint(spec: SandboxSpec) -> tuple[int, float]:
    """The memory (bytes) and CPUs a sandbox of ``spec`` may take at most: its
    container's limits and each sidecar's (never above the container's)."""
    memory = memory_bytes(spec.memory)
    total, cpus = memory, spec.cpus
    for sidecar in spec.sidecars:
        total += min(memory_bytes(sidecar.memory), memory) if sidecar.memory else memory
        cpus += min(sidecar.cpus or spec.cpus, spec.cpus)
    return total, cpus


def is_resource_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the host ran short: no memory, no disk
    space, no more processes or open files."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        if isinstance(current, OSError) and current.errno in _RESOURCE_ERRNOS:
            return True
        if _RESOURCE_TEXT.search(str(current)):
            return True
        current = current.__cause__ or current.__context__
    return False
