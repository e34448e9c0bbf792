"""The episode clock: what a time limit counts, and cutting a call when it runs out."""

from __future__ import annotations

import asyncio

import pytest

from gem_eval.clock import EpisodeClock, TimeLimitReached, current, queued


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_waits_are_left_out_once_even_when_they_overlap() -> None:
    time = FakeTime()
    clock = EpisodeClock(time)
    time.now += 2  # working
    with clock.paused():
        time.now += 5
        with clock.paused():  # a second wait inside the first counts once
            time.now += 1
        assert (clock.elapsed_s(), clock.queued_s()) == (2, 6)  # a wait under way counts
        time.now += 1
    time.now += 3
    assert (clock.elapsed_s(), clock.queued_s()) == (5, 7)


def test_queued_stops_the_clock_of_the_episode_it_runs_in_and_its_tasks() -> None:
    time = FakeTime()
    clock, other = EpisodeClock(time), EpisodeClock(time)

    async def wait_for_a_slot() -> None:
        with queued():
            time.now += 4

    async def main() -> None:
        with queued():  # outside any episode: nothing to stop
            time.now += 1
        with clock.running():
            assert current() is clock
            await asyncio.create_task(wait_for_a_slot())  # a task sees its episode's clock
        assert current() is None

    asyncio.run(main())
    assert (clock.queued_s(), clock.elapsed_s()) == (4, 1)
    assert other.queued_s() == 0


def test_a_call_is_cut_when_its_own_time_reaches_the_limit() -> None:
    async def main() -> float:
        clock = EpisodeClock()
        with pytest.raises(TimeLimitReached):
            await clock.run_until(asyncio.sleep(5), limit_s=0.2)
        return clock.elapsed_s()

    assert 0.2 <= asyncio.run(main()) < 2


def test_time_queued_moves_the_deadline() -> None:
    async def call() -> str:
        with queued():
            await asyncio.sleep(0.5)  # waits for a slot longer than the limit
        await asyncio.sleep(0.05)  # then works, within it
        return "answered"

    async def main() -> tuple[str, float]:
        clock = EpisodeClock()
        with clock.running():
            answer = await clock.run_until(call(), limit_s=0.3)
        return answer, clock.queued_s()

    answer, queued_s = asyncio.run(main())
    assert answer == "answered" and queued_s >= 0.5


def test_a_cancelled_episode_cancels_its_call() -> None:
    stopped = []

    async def call() -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            stopped.append(True)
            raise

    async def main() -> None:
        task = asyncio.create_task(EpisodeClock().run_until(call(), limit_s=10))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert stopped == [True]
