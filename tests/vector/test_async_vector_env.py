"""What only the async vector env does: concurrency, submit/wait, its state machine."""

from __future__ import annotations

import asyncio
import threading

import pytest

from gem_eval.core import Env, StepResult
from gem_eval.errors import VectorEnvError, VectorEnvStateError
from gem_eval.vector import AsyncState, AsyncVectorEnv
from gem_eval.wrappers import EpisodeStats, MaxTurns
from tests.fakes import FakeEnv


class BarrierEnv(FakeEnv):
    """A blocking env whose step waits until every sub-env is inside step."""

    blocking = True

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__()
        self.barrier = barrier
        self.thread = ""

    def step(self, action: str) -> StepResult:
        self.barrier.wait()  # raises BrokenBarrierError if the steps ran one by one
        self.thread = threading.current_thread().name
        return super().step(action)


def test_blocking_envs_step_concurrently_in_threads() -> None:
    n = 6
    barrier = threading.Barrier(n, timeout=10)
    envs = [BarrierEnv(barrier) for _ in range(n)]
    vec = AsyncVectorEnv(envs)
    vec.reset(seed=0)
    obs, *_ = vec.step(["go"] * n)
    assert obs == ["go@1"] * n
    assert all(e.thread.startswith("gem-eval-vec") for e in envs)
    vec.close()


class RendezvousEnv(FakeEnv):
    """A natively async env: astep waits on the loop until all sub-envs arrived."""

    arrived = 0
    everyone: asyncio.Event

    async def astep(self, action: str) -> StepResult:
        RendezvousEnv.arrived += 1
        if RendezvousEnv.arrived == 4:
            RendezvousEnv.everyone.set()
        await asyncio.wait_for(RendezvousEnv.everyone.wait(), timeout=10)
        return self.step(action)


@pytest.mark.parametrize("wrapped", [False, True])
def test_native_async_envs_interleave_on_the_loop(wrapped: bool) -> None:
    """Also through a wrapper: wrappers keep a natively async env async."""

    def env() -> Env:
        inner = RendezvousEnv()
        return EpisodeStats(MaxTurns(inner, 5)) if wrapped else inner

    async def main() -> tuple[list[str], list[dict[str, object]]]:
        RendezvousEnv.arrived = 0
        RendezvousEnv.everyone = asyncio.Event()
        vec = AsyncVectorEnv([env() for _ in range(4)])
        await vec.areset(seed=0)
        obs, _, _, _, infos = await vec.astep(["x"] * 4)
        return obs, infos  # type: ignore[return-value]

    obs, infos = asyncio.run(main())
    assert obs == ["x@1"] * 4 and all(i == {"k": 1} for i in infos)


def test_submit_and_wait_are_separate_and_state_is_named() -> None:
    async def main() -> None:
        vec = AsyncVectorEnv([FakeEnv(), FakeEnv()])
        with pytest.raises(VectorEnvStateError, match="nothing to wait for"):
            await vec.step_wait()
        vec.reset_async(seed=1)
        assert vec.state is AsyncState.WAITING_RESET
        with pytest.raises(VectorEnvStateError, match="waiting_reset"):
            vec.step_async(["a", "a"])
        obs, _ = await vec.reset_wait()
        assert vec.state is AsyncState.IDLE and len(obs) == 2
        vec.step_async(["a", "a"])
        assert vec.state is AsyncState.WAITING_STEP
        result = await vec.step_wait()
        assert result[0] == ["a@1", "a@1"]
        with pytest.raises(VectorEnvStateError, match="inside an event loop"):
            vec.step(["a", "a"])

    asyncio.run(main())


def test_every_failure_is_counted_and_the_first_index_named() -> None:
    vec = AsyncVectorEnv([FakeEnv(), FakeEnv(fail_at=1), FakeEnv(fail_at=1)])

    async def main() -> None:
        await vec.areset(seed=0)
        with pytest.raises(VectorEnvError) as err:
            await vec.astep(["a"] * 3)
        assert err.value.index == 1
        assert "1 other sub-env(s) also failed" in str(err.value)
        assert vec.state is AsyncState.IDLE  # usable again after the error
        obs, *_ = await vec.astep({0: "b"})
        assert obs == {0: "b@2"}

    asyncio.run(main())
    vec.close()


class BlockingFailEnv(FakeEnv):
    blocking = True


def test_a_failing_blocking_env_is_named_too() -> None:
    vec = AsyncVectorEnv([BlockingFailEnv(), BlockingFailEnv(fail_at=1)])
    vec.reset(seed=0)
    with pytest.raises(VectorEnvError) as err:
        vec.step(["a", "a"])
    assert err.value.index == 1 and isinstance(err.value.__cause__, RuntimeError)
    vec.close()


def test_submitting_outside_an_event_loop_is_a_state_error() -> None:
    vec = AsyncVectorEnv([FakeEnv()])
    with pytest.raises(VectorEnvStateError, match="running event loop"):
        vec.step_async(["a"])
    assert vec.state is AsyncState.IDLE
    assert vec.step(["a"])[0] == ["a@1"]
