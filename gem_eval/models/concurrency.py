"""An adaptive limit on a model's calls in flight: shrinks on 429s, grows back on success."""

from __future__ import annotations

import asyncio
import math
from types import TracebackType


class AdaptiveLimit:
    """A semaphore whose size follows the provider's rate limits (AIMD).

    A 429 cuts the limit to ``decrease`` times its size (at most once per limit "epoch":
    a burst of 429s from calls started under the same limit counts once). Each run of
    ``limit`` successes in a row raises it by one, up to ``maximum``.

    Args:
        initial: Calls in flight at first.
        minimum: Never below this.
        maximum: Never above this.
        decrease: Factor applied on a 429.
    """

    def __init__(
        self, initial: int = 20, minimum: int = 1, maximum: int = 100, decrease: float = 0.8
    ) -> None:
        if not 1 <= minimum <= initial <= maximum:
            raise ValueError("need 1 <= minimum <= initial <= maximum")
        self.limit, self.minimum, self.maximum, self.decrease = initial, minimum, maximum, decrease
        self.in_flight = 0
        self.epoch = 0
        self._successes = 0
        self._cond: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._cond is None or self._loop is not loop:  # one per event loop
            self._cond, self._loop = asyncio.Condition(), loop
        return self._cond

    async def acquire(self) -> int:
        """Wait for a free slot; return the epoch the call starts in."""
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            return self.epoch

    async def release(self) -> None:
        cond = self._condition()
        async with cond:
            self.in_flight -= 1
            cond.notify_all()

    def on_rate_limit(self, epoch: int) -> None:
        """A call started in ``epoch`` got a 429."""
        if epoch == self.epoch:
            self.limit = max(self.minimum, math.floor(self.limit * self.decrease))
            self.epoch += 1
            self._successes = 0

    def on_success(self) -> None:
        self._successes += 1
        if self._successes >= self.limit and self.limit < self.maximum:
            self.limit += 1  # waiters see it when the finishing call releases its slot
            self._successes = 0

    async def __aenter__(self) -> int:
        return await self.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()
