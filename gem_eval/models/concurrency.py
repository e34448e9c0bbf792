"""``AdaptiveLimit``: a model's calls in flight, cut on 429s and regained within seconds."""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from types import TracebackType

from gem_eval.clock import queued


class AdaptiveLimit:
    """A FIFO semaphore whose size follows the provider's rate limits.

    The rule (additive increase in time, multiplicative decrease per burst):

    * It starts at ``initial``, what the run asked for (``--max-connections``, else
      ``--concurrency``), and never exceeds ``maximum`` (at least ``initial``).
    * A 429 cuts it to ``decrease`` times its size, once per burst: a 429 cuts only if the
      call was sent after the last cut (its ``epoch``) and at least ``cooldown_s`` after
      it. The rest of a burst needs no cut of its own: each refused call waits out its
      ``Retry-After`` without holding a slot, which spaces the calls by itself.
    * A 429 cuts only when the server refuses a real share of the calls: at least
      ``min_share`` of the last ``window`` answers (429s and successes). A server that
      refuses a call now and then is not saying it is overloaded: the refused call waits
      its ``Retry-After`` and holds back no other call.
    * It grows back with time, not with successes: ``maximum / recover_s`` slots a
      second since the last cut, so after the last 429 it is back at ``maximum`` within
      ``recover_s`` seconds, and one cut (of 20%) heals in about a fifth of that.

    Under a steady trickle of 429s it thus hovers between ``decrease * maximum`` and
    ``maximum`` instead of collapsing to ``minimum``. A call cut by a timeout is no sign
    of a rate limit and changes nothing here. Waiters are served in order, and a freed
    slot wakes exactly one of them (no thundering herd when hundreds of episodes wait on
    one model). The time an episode waits here is not its own: it does not count against
    its time limit (:func:`gem_eval.clock.queued`).

    Args:
        initial: Calls in flight at first.
        minimum: Never below this.
        maximum: Never above this; ``None``: ``initial``.
        decrease: Factor applied by a cut.
        cooldown_s: Seconds after a cut during which 429s count as the same burst.
        recover_s: The most seconds the limit takes to climb back to ``maximum``.
        min_share: The share of 429s among the last ``window`` answers at which a 429
            cuts the limit.
        window: How many of the latest answers that share is taken over.
        clock: Seconds from a monotonic clock (injectable for tests).
    """

    def __init__(
        self,
        initial: int = 20,
        minimum: int = 1,
        maximum: int | None = None,
        decrease: float = 0.8,
        cooldown_s: float = 2.0,
        recover_s: float = 8.0,
        min_share: float = 0.2,
        window: int = 50,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        maximum = initial if maximum is None else maximum
        if not 1 <= minimum <= initial <= maximum:
            raise ValueError("need 1 <= minimum <= initial <= maximum")
        if not 0 < decrease < 1 or cooldown_s < 0 or recover_s <= 0:
            raise ValueError("need 0 < decrease < 1, cooldown_s >= 0 and recover_s > 0")
        self.minimum, self.maximum, self.decrease = minimum, maximum, decrease
        self.cooldown_s, self.recover_s, self._clock = cooldown_s, recover_s, clock
        self.in_flight = 0
        self.epoch = 0
        self.cuts = 0
        self._base = initial  # the limit right after the last cut
        self._cut_at: float | None = None  # when that was; None: never cut
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.min_share = min_share
        self._answers: deque[bool] = deque(maxlen=window)  # True: a 429
        self._refused = 0  # the 429s among them

    @property
    def limit(self) -> int:
        """Calls allowed in flight now."""
        if self._cut_at is None:
            return self._base
        regained = (self._clock() - self._cut_at) * self.maximum / self.recover_s
        return min(self.maximum, self._base + math.floor(regained))

    @limit.setter
    def limit(self, value: int) -> None:
        """Set the limit as if it had started there (no cut, no epoch change)."""
        self._base = max(self.minimum, min(self.maximum, value))
        self._cut_at = None

    async def acquire(self) -> int:
        """Wait for a free slot; return the epoch the call starts in."""
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return self.epoch
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._wake()  # slots regained with time are handed out in order
        try:
            with queued():
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
        limit = self.limit
        while self._waiters and self.in_flight < limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1  # taken on the waiter's behalf
                waiter.set_result(None)

    def on_rate_limit(self, epoch: int) -> bool:
        """A call started in ``epoch`` got a 429; return whether that cut the limit."""
        self._answer(refused=True)
        if self._refused < self.min_share * len(self._answers):
            return False  # a refusal now and then: only the refused call waits
        now = self._clock()
        if epoch != self.epoch:
            return False  # sent under an older, larger limit: that burst was counted
        if self._cut_at is not None and now - self._cut_at < self.cooldown_s:
            return False
        self._base = max(self.minimum, math.floor(self.limit * self.decrease))
        self._cut_at = now
        self.epoch += 1
        self.cuts += 1
        return True

    def on_success(self) -> None:
        """A call succeeded: slots regained since the last look may wake waiters."""
        self._answer(refused=False)
        if self._waiters:
            self._wake()

    def _answer(self, refused: bool) -> None:
        answers = self._answers
        if answers.maxlen is not None and len(answers) == answers.maxlen:
            self._refused -= answers[0]
        answers.append(refused)
        self._refused += refused

    async def __aenter__(self) -> int:
        return await self.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
