"""Retry policy and adaptive connection limit, without HTTP (see test_chat_models.py)."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from gem_eval.errors import ModelCallError
from gem_eval.models.concurrency import AdaptiveLimit
from gem_eval.models.retry import (
    Failure,
    MalformedReplyError,
    RetryPolicy,
    backoff,
    classify,
    connection_failure,
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


def test_a_connection_that_failed_is_named_from_its_cause() -> None:
    # litellm reports a refused connection as a 500 "Connection error." raised from it.
    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
        except ConnectionRefusedError as cause:
            raise StatusError(500) from cause
    except StatusError as exc:
        refused = exc
    assert connection_failure(refused) == (
        "connection refused: [Errno 111] Connect call failed ('127.0.0.1', 9)"
    )
    assert classify(refused) == Failure(True)  # no server answered: no status
    result, _ = run_with_script([refused], max_retries=0)
    assert isinstance(result, ModelCallError)
    assert (result.status, str(result)) == (None, connection_failure(refused))
    assert connection_failure(StatusError(500)) is None
    assert connection_failure(TimeoutError("read timed out")) is None


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


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_limit_starts_at_what_was_asked_and_never_exceeds_it() -> None:
    limit = AdaptiveLimit(initial=64)
    assert (limit.limit, limit.maximum) == (64, 64)
    assert AdaptiveLimit(initial=20, maximum=100).limit == 20


@pytest.mark.parametrize("backend", ["litellm", "openai"])
def test_a_run_gives_each_model_the_connections_it_asked_for(backend: str) -> None:
    from gem_eval.records import ModelSpec
    from gem_eval.runner.session import default_model_factory

    spec = ModelSpec(name="openai/fake", base_url="http://127.0.0.1:9/v1", backend=backend)
    model = default_model_factory(spec, concurrency=64)  # --concurrency 64
    assert (model.limit.limit, model.limit.maximum) == (64, 64)
    spec = spec.model_copy(update={"max_connections": 8})  # --max-connections 8
    model = default_model_factory(spec, concurrency=64)
    assert (model.limit.limit, model.limit.maximum) == (8, 8)


def test_a_burst_of_429s_cuts_the_limit_once() -> None:
    clock = FakeClock()
    limit = AdaptiveLimit(initial=64, clock=clock)
    epoch = limit.epoch
    cut = [limit.on_rate_limit(epoch) for _ in range(30)]  # 30 calls refused at once
    assert cut.count(True) == 1 and limit.limit == 51  # 64 x 0.8, once
    # Calls sent after the cut and refused within the cooldown: the same burst.
    clock.now += 1.0
    assert not limit.on_rate_limit(limit.epoch)
    assert limit.cuts == 1
    # A 429 after the cooldown, from a call sent under the cut limit: a new burst.
    clock.now += 1.5
    before = limit.limit
    assert limit.on_rate_limit(limit.epoch)
    assert limit.cuts == 2 and limit.limit == int(before * 0.8)


def test_limit_recovers_within_seconds_once_429s_stop() -> None:
    clock = FakeClock()
    limit = AdaptiveLimit(initial=64, recover_s=10.0, cooldown_s=0.0, clock=clock)
    while limit.limit > limit.minimum:  # cut all the way down
        assert limit.on_rate_limit(limit.epoch)
    assert limit.limit == 1
    clock.now += 5.0
    assert 1 < limit.limit < 64  # climbing, by time alone
    clock.now += 5.0
    assert limit.limit == 64  # back at what was asked within recover_s
    clock.now += 100.0
    assert limit.limit == 64  # and no further
    # One cut heals in about a fifth of recover_s.
    limit.on_rate_limit(limit.epoch)
    assert limit.limit == 51
    clock.now += 2.1
    assert limit.limit == 64


def test_steady_429s_do_not_collapse_the_limit() -> None:
    clock = FakeClock()
    limit = AdaptiveLimit(initial=64, clock=clock)
    lowest = limit.limit
    for _ in range(600):  # a refused call every 0.1 s for a minute, each sent just before
        clock.now += 0.1
        limit.on_rate_limit(limit.epoch)
        lowest = min(lowest, limit.limit)
    assert lowest >= int(0.8 * 64)  # it hovers between 0.8 and 1 times what was asked


def test_regained_slots_wake_waiters_in_order() -> None:
    clock = FakeClock()
    limit = AdaptiveLimit(initial=4, minimum=1, recover_s=3.0, cooldown_s=0.0, clock=clock)
    order: list[int] = []

    async def main() -> None:
        for _ in range(4):
            await limit.acquire()
        while limit.limit > 1:
            limit.on_rate_limit(limit.epoch)
        for _ in range(3):  # three calls end: none may start, one slot is all there is
            limit.release()
        waiters = [asyncio.create_task(call(n)) for n in range(3)]
        await asyncio.sleep(0)
        assert order == [] and limit.in_flight == 1
        clock.now += 2.0  # two slots regained
        limit.on_success()
        await asyncio.sleep(0)
        assert order == [0, 1]
        limit.release()
        await asyncio.gather(*waiters)

    async def call(n: int) -> None:
        await limit.acquire()
        order.append(n)

    asyncio.run(main())
    assert order == [0, 1, 2]


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
    with pytest.raises(ValueError):
        AdaptiveLimit(initial=5, decrease=1.0)


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


def test_a_429_now_and_then_holds_back_no_other_call() -> None:
    """A server that refuses one call in twenty is not overloaded: the refused call waits
    its Retry-After, and the limit stays where it was. When refusals become a real share
    of the answers, the limit is cut."""
    clock = FakeClock()
    limit = AdaptiveLimit(initial=64, clock=clock)
    for i in range(400):
        clock.now += 0.05
        if i % 20 == 19:
            assert not limit.on_rate_limit(limit.epoch)
        else:
            limit.on_success()
    assert (limit.limit, limit.cuts) == (64, 0)
    for _ in range(8):  # then the server starts refusing one call in three
        limit.on_success()
        limit.on_success()
        cut = limit.on_rate_limit(limit.epoch)
        if cut:
            break
    assert cut and limit.limit == 51
