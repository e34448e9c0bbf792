from __future__ import annotations

import random
import threading

from gem_eval.core import Wrapper
from tests.fakes import FakeEnv


def test_reset_with_seed_is_reproducible() -> None:
    a, b = FakeEnv(), FakeEnv()
    assert a.reset(7)[0] == b.reset(7)[0]
    assert a.reset(8)[0] != a.reset(7)[0]


def test_reset_without_seed_continues_the_seeded_stream() -> None:
    a, b = FakeEnv(), FakeEnv()
    a.reset(3)
    b.reset(3)
    assert [a.reset()[0] for _ in range(3)] == [b.reset()[0] for _ in range(3)]
    assert len({a.reset()[0] for _ in range(5)}) > 1


def test_seeding_never_touches_global_random_state() -> None:
    random.seed(123)
    expected = random.random()
    random.seed(123)
    env = FakeEnv()
    env.reset(1)
    env.reset()
    assert random.random() == expected


def test_envs_in_parallel_threads_stay_reproducible() -> None:
    def draws(seed: int, out: dict[int, list[str]]) -> None:
        env = FakeEnv()
        env.reset(seed)
        out[seed] = [env.reset()[0] for _ in range(200)]

    serial: dict[int, list[str]] = {}
    for s in range(4):
        draws(s, serial)
    parallel: dict[int, list[str]] = {}
    threads = [threading.Thread(target=draws, args=(s, parallel)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert parallel == serial


class Upper(Wrapper):
    def step(self, action: str):  # type: ignore[no-untyped-def]
        obs, *rest = self.env.step(action)
        return (obs.upper(), *rest)


def test_wrapper_overrides_one_hook_and_forwards_the_rest() -> None:
    inner = FakeEnv(length=2)
    env = Upper(Upper(inner))
    assert env.unwrapped is inner
    assert env.length == 2  # attribute falls through
    env.reset(0)
    assert env.step("go")[0] == "GO@1"
    env.close()
    assert inner.closed
    assert env.rng is inner.rng


def test_async_step_matches_sync_step() -> None:
    import asyncio

    a, b = FakeEnv(), FakeEnv()
    a.reset(1)
    b.reset(1)
    assert asyncio.run(a.astep("x")) == b.step("x")
