"""Retry policy and adaptive connection limit, without HTTP (see test_chat_models.py)."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from gem_eval.errors import ModelCallError
from gem_eval.models.concurrency import AdaptiveLimit
from gem_eval.models.retry import (
    MalformedReplyError,
    RetryPolicy,
    backoff,
    classify,
    with_retries,
)


class StatusError(Exception):
    def __init__(self, status: int, retry_after: str | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.litellm_response_headers = {"retry-after": retry_after} if retry_after else {}


@pytest.mark.parametrize(
    ("exc", "transient", "retry_after"),
    [
        (StatusError(429, "3"), True, 3.0),
        (StatusError(500), True, None),
        (StatusError(503), True, None),
        (StatusError(408), True, None),
        (StatusError(400), False, None),
        (StatusError(401), False, None),
        (StatusError(404), False, None),
        (MalformedReplyError("no choices"), True, None),
        (json.JSONDecodeError("x", "doc", 0), True, None),
    ],
)
def test_classify(exc: Exception, transient: bool, retry_after: float | None) -> None:
    failure = classify(exc)
    assert failure is not None
    assert (failure.transient, failure.retry_after) == (transient, retry_after)


def test_our_own_bugs_are_not_retried() -> None:
    assert classify(TypeError("oops")) is None


def test_backoff_doubles_with_jitter_and_honours_retry_after() -> None:
    policy = RetryPolicy(initial_wait_s=1.0, max_wait_s=10.0)
    rng = random.Random(0)
    waits = [[backoff(policy, n, None, rng) for _ in range(200)] for n in (1, 2, 3, 6)]
    assert [max(w) <= cap for w, cap in zip(waits, (1, 2, 4, 10))] == [True] * 4
    assert max(waits[2]) > 2  # the ceiling really grew
    assert backoff(policy, 1, 7.0, rng) == 7.0
    assert backoff(policy, 1, 99.0, rng) == 10.0


def run_with_script(script: list[Exception | str], **policy: float) -> tuple[object, list[float]]:
    """Run ``with_retries`` over calls that raise or return the scripted items in order."""
    calls = iter(script)
    slept: list[float] = []

    async def call() -> str:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def main() -> object:
        try:
            return await with_retries(call, RetryPolicy(**policy), sleep=sleep)  # type: ignore[arg-type]
        except ModelCallError as exc:
            return exc

    return asyncio.run(main()), slept


def test_transient_failures_are_retried_and_counted() -> None:
    result, slept = run_with_script([StatusError(429, "2"), StatusError(500), "ok"])
    assert result == ("ok", 2)
    assert slept[0] == 2.0 and len(slept) == 2


def test_permanent_failure_is_not_retried() -> None:
    result, slept = run_with_script([StatusError(401), "never"])
    assert isinstance(result, ModelCallError)
    assert (result.status, result.transient, result.retries, slept) == (401, False, 0, [])


def test_retries_run_out() -> None:
    result, slept = run_with_script([StatusError(503)] * 4, max_retries=3)
    assert isinstance(result, ModelCallError)
    assert (result.status, result.transient, result.retries, len(slept)) == (503, True, 3, 3)


def test_limit_shrinks_once_per_epoch_and_grows_back() -> None:
    limit = AdaptiveLimit(initial=20, maximum=100)
    epoch = limit.epoch
    for _ in range(20):  # a burst of 429s from calls started under one limit
        limit.on_rate_limit(epoch)
    assert limit.limit == 16
    limit.on_rate_limit(limit.epoch)
    assert limit.limit == 12
    for _ in range(12):
        limit.on_success()
    assert limit.limit == 13
    for _ in range(10):
        limit.on_rate_limit(limit.epoch)
    assert limit.limit == 1  # never below the minimum


def test_limit_bounds_calls_in_flight() -> None:
    limit = AdaptiveLimit(initial=3, maximum=3)
    peak = 0

    async def work() -> None:
        nonlocal peak
        async with limit:
            peak = max(peak, limit.in_flight)
            await asyncio.sleep(0.01)

    async def main() -> None:
        await asyncio.gather(*(work() for _ in range(20)))

    asyncio.run(main())
    assert peak == 3 and limit.in_flight == 0


def test_limit_rejects_inconsistent_bounds() -> None:
    with pytest.raises(ValueError):
        AdaptiveLimit(initial=5, maximum=4)


def test_waiters_are_served_in_order_and_cancellation_frees_nothing_twice() -> None:
    limit = AdaptiveLimit(initial=1, maximum=1)
    order: list[int] = []

    async def work(n: int) -> None:
        async with limit:
            order.append(n)
            await asyncio.sleep(0)

    async def main() -> None:
        await limit.acquire()  # hold the only slot
        tasks = [asyncio.create_task(work(n)) for n in range(4)]
        await asyncio.sleep(0)
        tasks[1].cancel()  # a waiter that gives up
        await asyncio.sleep(0)
        limit.release()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    assert order == [0, 2, 3]
    assert limit.in_flight == 0
