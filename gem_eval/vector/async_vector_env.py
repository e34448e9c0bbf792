"""Steps sub-envs concurrently on an asyncio event loop.

Sub-envs that are not ``blocking`` run their (async) ``astep`` on the loop; ``blocking``
sub-envs (containers, servers) run their ``step`` in a thread pool, so a slow one never
holds up the others. Submitting and waiting are separate calls::

    vec.step_async(actions)       # schedule (inside a running loop)
    obs, rewards, ... = await vec.step_wait()

``await vec.astep(actions)`` does both; ``vec.step(actions)`` does both on a private
loop for callers without one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import Enum
from typing import Any

from gem_eval.core import Env, ResetResult, StepResult
from gem_eval.errors import VectorEnvError, VectorEnvStateError
from gem_eval.vector.vector_env import (
    Actions,
    AutoresetMode,
    PartialStepResult,
    Seeds,
    VectorEnv,
    VectorResetResult,
    VectorStepResult,
)


class AsyncState(Enum):
    """What an :class:`AsyncVectorEnv` is waiting for."""

    IDLE = "idle"
    WAITING_RESET = "waiting_reset"
    WAITING_STEP = "waiting_step"


class AsyncVectorEnv(VectorEnv):
    """A vector env whose sub-envs step concurrently.

    Args:
        envs: The sub-envs.
        autoreset_mode: See :mod:`gem_eval.vector.vector_env`.
        seed: Default seed of the first reset.
        max_workers: Threads for ``blocking`` sub-envs (default: one per sub-env).
    """

    def __init__(
        self,
        envs: Sequence[Env],
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        seed: int | None = None,
        max_workers: int | None = None,
    ) -> None:
        super().__init__(envs, autoreset_mode, seed)
        self._max_workers = max_workers or self.num_envs
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.state = AsyncState.IDLE
        self._pending: asyncio.Future[list[Any]] | None = None
        self._pending_pairs: list[tuple[int, str]] = []
        self._pending_partial = False

    # ------------------------------------------------------- submit / wait
    def reset_async(self, seed: Seeds = None, *, indices: Sequence[int] | None = None) -> None:
        """Schedule a reset (inside a running loop); collect it with :meth:`reset_wait`."""
        targets = list(range(self.num_envs)) if indices is None else list(indices)
        seeds = self._seeds(seed, targets)
        self._submit(
            AsyncState.WAITING_RESET,
            [self._reset_one(i, s) for i, s in zip(targets, seeds)],
        )
        self._pending_pairs = [(i, "") for i in targets]

    async def reset_wait(self) -> VectorResetResult:
        """Wait for the reset scheduled by :meth:`reset_async`."""
        return self._pack_reset(await self._wait(AsyncState.WAITING_RESET))

    def step_async(self, actions: Actions) -> None:
        """Schedule a step (inside a running loop); collect it with :meth:`step_wait`."""
        pairs = self._indices(actions)
        self._submit(AsyncState.WAITING_STEP, [self._step_one(i, a) for i, a in pairs])
        self._pending_pairs, self._pending_partial = pairs, isinstance(actions, Mapping)

    async def step_wait(self) -> VectorStepResult | PartialStepResult:
        """Wait for the step scheduled by :meth:`step_async`."""
        results = await self._wait(AsyncState.WAITING_STEP)
        return self._pack_step(self._pending_pairs, results, self._pending_partial)

    async def areset(
        self, seed: Seeds = None, *, indices: Sequence[int] | None = None
    ) -> VectorResetResult:
        self.reset_async(seed, indices=indices)
        return await self.reset_wait()

    async def astep(self, actions: Actions) -> VectorStepResult | PartialStepResult:
        self.step_async(actions)
        return await self.step_wait()

    # ------------------------------------------------ sync facade
    def reset(
        self, seed: Seeds = None, *, indices: Sequence[int] | None = None
    ) -> VectorResetResult:
        result: VectorResetResult = self._run(self.areset(seed, indices=indices))
        return result

    def step(self, actions: Actions) -> VectorStepResult | PartialStepResult:
        result: VectorStepResult | PartialStepResult = self._run(self.astep(actions))
        return result

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        if self._loop is not None:
            self._loop.close()

    # ------------------------------------------------------- internals
    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise VectorEnvStateError(
                "reset()/step() cannot run inside an event loop: use await areset()/astep()"
            )
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def _submit(self, state: AsyncState, coros: list[Coroutine[Any, Any, Any]]) -> None:
        if self.state is not AsyncState.IDLE:
            for c in coros:
                c.close()
            raise VectorEnvStateError(f"cannot submit while {self.state.value}")
        self._pending = asyncio.gather(*coros, return_exceptions=True)
        self.state = state

    async def _wait(self, state: AsyncState) -> list[Any]:
        if self.state is not state or self._pending is None:
            raise VectorEnvStateError(f"nothing to wait for in state {self.state.value}")
        try:
            results = await self._pending
        finally:
            self.state, self._pending = AsyncState.IDLE, None
        errors = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException)]
        if errors:
            pos, exc = errors[0]
            index = self._pending_pairs[pos][0]
            raise VectorEnvError(index, exc, others=len(errors) - 1) from exc
        return results

    async def _reset_one(self, i: int, seed: int | None) -> ResetResult:
        return self._after_reset(i, await self._env_reset(i, seed))

    async def _step_one(self, i: int, action: str) -> StepResult:
        if self._pending_reset[i]:
            return self._next_step_reset(self._after_reset(i, await self._env_reset(i, None)))
        env = self.envs[i]
        if env.blocking:
            result: StepResult = await self._in_thread(env.step, action)
        else:
            result = await env.astep(action)
        if self._ends_episode(i, result):
            return self._same_step_reset(result, await self._env_reset(i, None))
        return result

    async def _env_reset(self, i: int, seed: int | None) -> ResetResult:
        env = self.envs[i]
        if env.blocking:
            return await self._in_thread(env.reset, seed)  # type: ignore[no-any-return]
        return await env.areset(seed)

    async def _in_thread(self, fn: Any, arg: Any) -> Any:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._max_workers, "gem-eval-vec")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, arg)
