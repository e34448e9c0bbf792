"""``EpisodeClock``: the time an episode is charged for, less the time it queued.

Episodes share slots: one model's connections above all (a local llama.cpp server
decodes one request at a time, so its model takes one call at a time). An episode
waiting for a slot is not working, and its time limit (``max_time_s``) must not depend
on how many episodes run beside it. So the agent loop runs each episode under its own
clock (:meth:`EpisodeClock.running`), a limiter stops the clock of the episode that
waits (:func:`queued`), and the loop cuts a model call when the clock, not the wall,
reaches the limit (:meth:`EpisodeClock.run_until`).

The clock lives in a context variable: a limiter deep in a model's client needs no
handle on the episode, and code outside an episode (a judge's call) waits uncounted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

_current: ContextVar[EpisodeClock | None] = ContextVar("gem_eval_episode_clock", default=None)


class TimeLimitReached(asyncio.TimeoutError):
    """An episode's clock reached its time limit while a call was in flight."""


class EpisodeClock:
    """Seconds since an episode started, without those it spent queued for a slot.

    Args:
        clock: Seconds from a monotonic clock (injectable for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.started = clock()
        self._queued = 0.0  # waits that ended
        self._waiting = 0  # waits under way (nested, or side by side in one episode)
        self._since = 0.0  # when the first of them began

    def queued_s(self) -> float:
        """Seconds spent queued so far (a wait under way counts up to now)."""
        return self._queued + (self._clock() - self._since if self._waiting else 0.0)

    def elapsed_s(self) -> float:
        """Seconds charged so far: wall time since the start, less the queueing."""
        now = self._clock()
        waiting = now - self._since if self._waiting else 0.0
        return now - self.started - self._queued - waiting

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the clock for the code inside (it waits for a slot)."""
        if not self._waiting:
            self._since = self._clock()
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1
            if not self._waiting:
                self._queued += self._clock() - self._since

    @contextlib.contextmanager
    def running(self) -> Iterator[EpisodeClock]:
        """Make this the clock :func:`queued` stops, for the code inside and the tasks
        it starts."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    async def run_until(self, call: Awaitable[T], limit_s: float | None) -> T:
        """Await ``call``; cancel it once this clock reaches ``limit_s`` (``None``: never).

        The deadline moves with the clock: while the call waits for a slot the clock
        stands still, so the deadline is looked at again rather than fired. It never
        fires early (the clock runs at most as fast as the wall) nor late (it is
        looked at again exactly when the clock could have reached it).

        Raises:
            TimeLimitReached: The clock reached ``limit_s`` before the call finished
                (the call was cancelled and has unwound).
        """
        if limit_s is None:
            return await call
        task = asyncio.ensure_future(call)  # the task sees this context: the clock
        try:
            while not task.done():
                left = limit_s - self.elapsed_s()
                if left <= 0:
                    break
                await asyncio.wait({task}, timeout=left)
        except asyncio.CancelledError:  # the episode was cancelled: stop the call too
            task.cancel()
            await asyncio.wait({task})
            raise
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
            if task.cancelled():
                raise TimeLimitReached(f"the episode's time limit ({limit_s:g} s) was reached")
        return task.result()  # finished, even while unwinding: its result stands


def current() -> EpisodeClock | None:
    """The clock of the episode this code runs in, if any."""
    return _current.get()


@contextlib.contextmanager
def queued() -> Iterator[None]:
    """Leave the time spent inside out of the current episode's clock: wrap a wait for a
    slot shared with other episodes (outside an episode it changes nothing)."""
    clock = _current.get()
    if clock is None:
        yield
        return
    with clock.paused():
        yield
