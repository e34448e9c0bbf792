"""How long one model call may take, and cutting it then without losing a reply.

:class:`CallTimeout` derives the limit from the model's recent successful calls (the
rule is in :mod:`gem_eval.models.retry`); :func:`within` enforces it. The ceiling
(``--timeout``) is not enforced here but by the HTTP client itself, as before: this
module only ever cuts earlier.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

_GRACE_TURNS = 3
"""Event-loop turns a call gets past its deadline: a reply already on the socket, or read
but not yet handed back, finishes in one or two and is used rather than thrown away."""
_UNWIND_S = 5.0
"""How long a cut call may take to unwind (close its connection) before we stop waiting."""
_RECHECK_S = 1.0
"""How often a call in flight looks at its timeout again (it adapts while the call runs)."""


class CallTimeoutError(Exception):
    """A call was cut by the per-call timeout: the server sent nothing back in time.

    Not a ``TimeoutError``: the agent loop reads that as the episode's own time limit.

    Attributes:
        seconds: The timeout that cut it.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no reply within {seconds:.3g} s (the adaptive per-call timeout)")
        self.seconds = seconds


class CallTimeout:
    """A model's per-call timeout, adapted to the latency of its recent calls.

    :meth:`seconds` is ``max(floor_s, multiple * p95, 2 * slowest, 1.5 * max_tokens * t95)``
    doubled for each time the same call was already cut, where ``p95`` and ``slowest``
    are the 95th percentile and the maximum latency of the last ``window`` successful
    calls and ``t95`` the 95th percentile of their seconds per generated token (used only
    when the call sets ``max_tokens``). ``None`` (no cut before the ceiling) until
    ``min_samples`` calls succeeded, and whenever the value reaches ``ceiling_s``. Calls
    that were cut, or failed, are not observed: a hang must not stretch the timeout meant
    to cut the next one.

    Args:
        ceiling_s: The longest any call may take (``--timeout``).
        floor_s: The shortest timeout, however fast the model usually is.
        multiple: Times the p95 latency a call may take.
        min_samples: Successful calls seen before the timeout adapts.
        window: Recent calls the statistics are taken over.
    """

    def __init__(
        self,
        ceiling_s: float = 120.0,
        floor_s: float = 1.0,
        multiple: float = 5.0,
        min_samples: int = 16,
        window: int = 256,
    ) -> None:
        self.ceiling_s, self.floor_s, self.multiple = ceiling_s, floor_s, multiple
        self.min_samples = min_samples
        self._latency: deque[float] = deque(maxlen=window)
        self._per_token: deque[float] = deque(maxlen=window)
        self._base: float | None = None  # cached max(floor, multiple x p95, 2 x slowest)

    def observe(self, latency_s: float, output_tokens: int = 0) -> None:
        """Record a successful call: its latency and the tokens it generated."""
        self._latency.append(latency_s)
        if output_tokens > 0:
            self._per_token.append(latency_s / output_tokens)
        self._base = None

    def seconds(self, max_tokens: int | None = None, cuts: int = 0) -> float | None:
        """The timeout of a call allowed ``max_tokens``, already cut ``cuts`` times.

        ``None``: no cut before the ceiling (not calibrated yet, or as slow as that).
        """
        if len(self._latency) < self.min_samples:
            return None
        if self._base is None:
            slowest = max(self._latency, default=0.0)
            self._base = max(self.floor_s, self.multiple * _p95(self._latency), 2 * slowest)
        timeout = self._base
        if max_tokens:
            timeout = max(timeout, 1.5 * max_tokens * _p95(self._per_token))
        timeout *= 2.0**cuts
        return timeout if timeout < self.ceiling_s else None


def _p95(values: deque[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


async def within(call: Awaitable[T], timeout: Callable[[], float | None]) -> T:
    """Await ``call``; cut it once it ran longer than ``timeout()``, unless its reply came.

    ``timeout()`` is asked again every second while the call runs (``None``: no cut
    yet), so a call sent before the timeout adapted is cut as soon as it has. The call
    runs as its own task. At the deadline it gets a few more event-loop turns, so that
    a reply that reached the socket as the deadline fired is read and used, not thrown
    away and asked for again. Otherwise it is cancelled, which closes its connection:
    the server drops the request and cannot answer it later. If it finishes anyway
    while unwinding, its result stands.

    Raises:
        CallTimeoutError: The call was cut.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    task = asyncio.ensure_future(call)
    seconds: float | None = None
    try:
        while not task.done():
            seconds = timeout()
            left = _RECHECK_S if seconds is None else started + seconds - loop.time()
            if left > 0:
                await asyncio.wait({task}, timeout=min(left, _RECHECK_S))
                continue
            for _ in range(_GRACE_TURNS):
                await asyncio.sleep(0)
                if task.done():
                    break
            break
    except asyncio.CancelledError:  # the episode ended (its time limit): stop the call too
        await _cut(task)
        raise
    if not task.done():
        await _cut(task)
        if not task.done() or task.cancelled():
            raise CallTimeoutError(seconds or 0.0)
    return task.result()


async def _cut(task: asyncio.Future[T]) -> None:
    """Cancel ``task`` and let it unwind (for at most ``_UNWIND_S``)."""
    task.cancel()
    await asyncio.wait({task}, timeout=_UNWIND_S)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: a failure while unwinding is not worth a warning
