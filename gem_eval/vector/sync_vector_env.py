"""Steps sub-envs one after another in the calling thread."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gem_eval.core import ResetResult, StepResult
from gem_eval.errors import VectorEnvError
from gem_eval.vector.vector_env import (
    Actions,
    PartialStepResult,
    Seeds,
    VectorEnv,
    VectorResetResult,
    VectorStepResult,
)


class SyncVectorEnv(VectorEnv):
    """The simplest vector env: a loop over the sub-envs.

    The fastest choice for pure-Python envs such as the text games. An exception in a
    sub-env is re-raised as :class:`~gem_eval.errors.VectorEnvError` naming its index.
    """

    def reset(
        self, seed: Seeds = None, *, indices: Sequence[int] | None = None
    ) -> VectorResetResult:
        targets = list(range(self.num_envs)) if indices is None else list(indices)
        results = [
            self._after_reset(i, self._call(i, self.envs[i].reset, s))
            for i, s in zip(targets, self._seeds(seed, targets))
        ]
        return self._pack_reset(results)

    def step(self, actions: Actions) -> VectorStepResult | PartialStepResult:
        pairs = self._indices(actions)
        results = [self._step_one(i, action) for i, action in pairs]
        return self._pack_step(pairs, results, partial=isinstance(actions, Mapping))

    def _step_one(self, i: int, action: str) -> StepResult:
        env = self.envs[i]
        if self._pending_reset[i]:
            return self._next_step_reset(self._after_reset(i, self._call(i, env.reset, None)))
        result: StepResult = self._call(i, env.step, action)
        if self._ends_episode(i, result):
            reset: ResetResult = self._call(i, env.reset, None)
            return self._same_step_reset(result, reset)
        return result

    @staticmethod
    def _call(i: int, fn: Any, arg: Any) -> Any:
        try:
            return fn(arg)
        except Exception as exc:
            raise VectorEnvError(i, exc) from exc
