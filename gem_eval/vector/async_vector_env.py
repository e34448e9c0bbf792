"""Steps sub-envs concurrently on an asyncio event loop.

Sub-envs with async methods of their own run ``astep`` as tasks on the loop;
``blocking`` sub-envs (containers, servers) run ``step`` in a thread pool, so a slow one
never holds up the others; plain pure-Python sub-envs are stepped directly, which costs
no more than a :class:`~gem_eval.vector.SyncVectorEnv`. Submitting and waiting are separate calls::

    vec.step_async(actions)       # schedule (inside a running loop)
    obs, rewards, ... = await vec.step_wait()

``await vec.astep(actions)`` does both; ``vec.step(actions)`` does both on a private
loop for callers without one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
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
        self._inline = [not env.blocking and not env.native_async for env in self.envs]
        self._jobs: list[tuple[int, Any]] = []
        self._pending: tuple[list[Any], list[int], asyncio.Future[list[Any]] | None] | None = None
        self._partial = False

    # ------------------------------------------------------- submit / wait
    def reset_async(self, seed: Seeds = None, *, indices: Sequence[int] | None = None) -> None:
        """Schedule a reset (inside a running loop); collect it with :meth:`reset_wait`."""
        targets = self._targets(indices)
        jobs = list(zip(targets, self._seeds(seed, targets)))
        self._submit(AsyncState.WAITING_RESET, jobs, self._reset_sync, self._reset_one)

    async def reset_wait(self) -> VectorResetResult:
        """Wait for the reset scheduled by :meth:`reset_async`."""
        return self._pack_reset(await self._wait(AsyncState.WAITING_RESET))

    def step_async(self, actions: Actions) -> None:
        """Schedule a step (inside a running loop); collect it with :meth:`step_wait`."""
        pairs = self._indices(actions)
        self._submit(AsyncState.WAITING_STEP, pairs, self._step_sync, self._step_one)
        self._partial = isinstance(actions, Mapping)

    async def step_wait(self) -> VectorStepResult | PartialStepResult:
        """Wait for the step scheduled by :meth:`step_async`."""
        pairs = self._jobs
        return self._pack_step(pairs, await self._wait(AsyncState.WAITING_STEP), self._partial)

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
        self._check_no_running_loop()
        if all(self._inline):  # nothing would overlap: skip the event loop
            return self._reset_all_sync(seed, indices)
        result: VectorResetResult = self._run(self.areset(seed, indices=indices))
        return result

    def step(self, actions: Actions) -> VectorStepResult | PartialStepResult:
        self._check_no_running_loop()
        if all(self._inline) and self.state is AsyncState.IDLE:
            return self._step_all_sync(actions)
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
    @staticmethod
    def _check_no_running_loop() -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        raise VectorEnvStateError(
            "reset()/step() cannot run inside an event loop: use await areset()/astep()"
        )

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def _submit(
        self,
        state: AsyncState,
        jobs: Sequence[tuple[int, Any]],
        run_inline: Callable[[int, Any], Any],
        run_async: Callable[[int, Any], Coroutine[Any, Any, Any]],
    ) -> None:
        """Start ``jobs``: plain sub-envs run now, the others as tasks on the loop.

        A sub-env that neither blocks nor has async methods of its own would only
        run inline inside a task anyway; calling it directly saves the task.
        """
        if self.state is not AsyncState.IDLE:
            raise VectorEnvStateError(f"cannot submit while {self.state.value}")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise VectorEnvStateError(
                "step_async()/reset_async() need a running event loop: use step()/reset()"
            ) from None
        results: list[Any] = [None] * len(jobs)
        coros, slots = [], []
        for pos, (i, arg) in enumerate(jobs):
            if self._inline[i]:
                try:
                    results[pos] = run_inline(i, arg)
                except VectorEnvError as exc:
                    results[pos] = exc.original
            else:
                coros.append(run_async(i, arg))
                slots.append(pos)
        gathered = asyncio.gather(*coros, return_exceptions=True) if coros else None
        self._jobs, self._pending = list(jobs), (results, slots, gathered)
        self.state = state

    async def _wait(self, state: AsyncState) -> list[Any]:
        if self.state is not state or self._pending is None:
            raise VectorEnvStateError(f"nothing to wait for in state {self.state.value}")
        results, slots, gathered = self._pending
        try:
            if gathered is not None:
                for pos, result in zip(slots, await gathered):
                    results[pos] = result
        except BaseException:
            # Cancelled (e.g. a timeout around step_wait): stop the tasks still running.
            # Sub-envs already stepping in threads finish that step; its result is lost.
            if gathered is not None:
                gathered.cancel()
            raise
        finally:
            self.state, self._pending = AsyncState.IDLE, None
        errors = [(pos, r) for pos, r in enumerate(results) if isinstance(r, BaseException)]
        if errors:
            pos, exc = errors[0]
            raise VectorEnvError(self._jobs[pos][0], exc, others=len(errors) - 1) from exc
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
