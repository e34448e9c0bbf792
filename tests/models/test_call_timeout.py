"""The adaptive per-call timeout, and cutting a call without losing its reply (no HTTP)."""

from __future__ import annotations

import asyncio

import pytest

from gem_eval.models.call_timeout import CallTimeout, CallTimeoutError, within
from gem_eval.models.retry import classify


def test_no_cut_before_the_ceiling_until_enough_calls_succeeded() -> None:
    timeout = CallTimeout(ceiling_s=120, floor_s=10, multiple=10, min_samples=16)
    for _ in range(15):
        timeout.observe(0.2)
    assert timeout.seconds() is None
    timeout.observe(0.2)
    assert timeout.seconds() == 10  # fast calls: the floor


def test_the_timeout_follows_the_p95_latency() -> None:
    timeout = CallTimeout(ceiling_s=120, floor_s=10, multiple=10, min_samples=16)
    for i in range(100):
        timeout.observe(3.0 if i % 10 == 0 else 1.0)  # one call in ten is slow
    assert timeout.seconds() == 30  # 10 x the p95 (3 s)
    for _ in range(256):  # the window forgets the old calls
        timeout.observe(6.0)
    assert timeout.seconds() == 60
    timeout.observe(40.0)  # one slow success: twice it is allowed from now on
    assert timeout.seconds() == 80
    for _ in range(256):
        timeout.observe(50.0)
    assert timeout.seconds() is None  # as slow as the ceiling: the ceiling alone applies


def test_each_cut_doubles_the_next_attempts_time() -> None:
    timeout = CallTimeout(ceiling_s=120, floor_s=10, min_samples=1)
    timeout.observe(0.1)
    assert [timeout.seconds(cuts=n) for n in range(5)] == [10, 20, 40, 80, None]


def test_a_long_generation_that_was_asked_for_is_not_cut() -> None:
    """Short calls set a 10 s timeout; a call allowed 4,000 tokens gets the time they take."""
    timeout = CallTimeout(ceiling_s=600, floor_s=10, min_samples=16)
    for _ in range(50):
        timeout.observe(0.5, output_tokens=25)  # 0.02 s a token
    assert timeout.seconds() == 10
    long_call = timeout.seconds(max_tokens=4000)
    assert long_call is not None and long_call >= 4000 * 0.02


def test_timeouts_are_transient_and_never_a_bare_timeout_error() -> None:
    for exc in (CallTimeoutError(10.0), TimeoutError()):
        failure = classify(exc)
        assert failure is not None and failure.transient and failure.timed_out
        assert not failure.rate_limited
    assert not isinstance(CallTimeoutError(1.0), TimeoutError)


def test_a_hung_call_is_cut_and_cancelled() -> None:
    cancelled = asyncio.Event()

    async def hang() -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()  # where a client closes its connection
            raise
        return "never"

    async def main() -> None:
        with pytest.raises(CallTimeoutError):
            await within(hang(), lambda: 0.01)
        assert cancelled.is_set()

    asyncio.run(main())


def test_a_call_sent_before_the_timeout_adapted_is_cut_once_it_has() -> None:
    timeout = CallTimeout(ceiling_s=120, floor_s=0.05, min_samples=1)

    async def hang() -> None:
        await asyncio.sleep(3600)

    async def main() -> None:
        call = asyncio.create_task(within(hang(), timeout.seconds))
        await asyncio.sleep(0.01)
        assert not call.done()  # no calls seen yet: nothing to cut by
        timeout.observe(0.01)  # another call answered: the timeout is now 0.05 s
        with pytest.raises(CallTimeoutError):
            await call

    asyncio.run(main())


def test_a_reply_read_as_the_deadline_fires_is_used() -> None:
    """The reply lands in the same loop turn as the deadline and needs one more to be read.

    A plain ``asyncio.wait_for`` cancels the call then and throws the reply away, and
    the retry asks the server for the same step again.
    """

    async def main() -> str:
        loop = asyncio.get_running_loop()
        arrived: asyncio.Future[str] = loop.create_future()
        deadline = 0.05
        loop.call_at(loop.time() + deadline - 1e-6, arrived.set_result, "reply")

        async def request() -> str:
            body = await arrived
            await asyncio.sleep(0)  # parsing the body: one more turn
            return body

        return await within(request(), lambda: deadline)

    assert asyncio.run(main()) == "reply"


def test_a_reply_in_time_is_returned_and_failures_pass_through() -> None:
    async def fast() -> str:
        return "ok"

    async def broken() -> str:
        raise ValueError("bad body")

    async def main() -> None:
        assert await within(fast(), lambda: 1.0) == "ok"
        assert await within(fast(), lambda: None) == "ok"
        with pytest.raises(ValueError):
            await within(broken(), lambda: 1.0)

    asyncio.run(main())


def test_ending_the_episode_cancels_the_call() -> None:
    cancelled = asyncio.Event()

    async def hang() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main() -> None:
        with pytest.raises(TimeoutError):  # the episode's time limit, as the loop sets it
            await asyncio.wait_for(within(hang(), lambda: 60.0), 0.01)
        assert cancelled.is_set()

    asyncio.run(main())
