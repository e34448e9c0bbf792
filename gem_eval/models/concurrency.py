"""An adaptive limit on a model's calls in flight: shrinks on 429s, grows back on success."""

from __future__ import annotations

import asyncio
import math
from collections import deque
from types import TracebackType


class AdaptiveLimit:
    """A FIFO semaphore whose size follows the provider's rate limits (AIMD).

    A 429 cuts the limit to ``decrease`` times its size (at most once per limit "epoch":
    a burst of 429s from calls started under the same limit counts once). Each run of
    ``limit`` successes raises it by one, up to ``maximum``. Waiters are served in
    order, and a freed slot wakes exactly one of them (no thundering herd when
    hundreds of episodes wait on one model).

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
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> int:
        """Wait for a free slot; return the epoch the call starts in."""
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return self.epoch
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # granted a slot, then cancelled: hand it on
            else:
                self._waiters.remove(waiter)
            raise
        return self.epoch

    def release(self) -> None:
        """Free a slot taken by :meth:`acquire`."""
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1  # taken on the waiter's behalf
                waiter.set_result(None)

    def on_rate_limit(self, epoch: int) -> None:
        """A call started in ``epoch`` got a 429."""
        if epoch == self.epoch:
            self.limit = max(self.minimum, math.floor(self.limit * self.decrease))
            self.epoch += 1
            self._successes = 0

    def on_success(self) -> None:
        self._successes += 1
        if self._successes >= self.limit and self.limit < self.maximum:
            self.limit += 1
            self._successes = 0
            self._wake()

    async def __aenter__(self) -> int:
        return await self.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
