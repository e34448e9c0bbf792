"""Steps sub-envs one after another in the calling thread."""

from __future__ import annotations

from collections.abc import Sequence

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
        return self._reset_all_sync(seed, indices)

    def step(self, actions: Actions) -> VectorStepResult | PartialStepResult:
        return self._step_all_sync(actions)
