"""What sync and async vector envs share: the API, seeding and autoreset bookkeeping.

A vector env steps ``num_envs`` sub-envs together::

    obs, infos = vec.reset(seed=0)              # sub-env i gets seed 0 + i
    obs, rewards, terminated, truncated, infos = vec.step(["\\\\boxed{5}"] * n)
    obs, rewards, ... = vec.step({0: "\\\\boxed{5}", 3: "\\\\boxed{9}"})   # partial step

A list of actions steps every sub-env and returns lists; a dict ``{index: action}``
steps only those sub-envs and returns dicts keyed by the same indices. Sub-envs left
out keep their state, including a pending autoreset.

Autoreset modes (what happens after a sub-env's episode ends):

* ``next_step`` (default): the step that ends the episode returns its final
  observation. The *next* step of that sub-env ignores its action, resets it, and
  returns the reset observation with reward 0.0, ``terminated=truncated=False`` and the
  reset info plus ``info["autoreset"] = True``.
* ``same_step``: the step that ends the episode resets the sub-env at once. It returns
  the *reset* observation with that step's reward, terminated and truncated; its info
  is the reset info plus ``info["final_obs"]`` and ``info["final_info"]`` (the
  observation and info the episode ended with).
* ``disabled``: nothing is reset; call ``reset(indices=[...])`` yourself.

Autoresets pass no seed: each sub-env's generator carries on, so a whole run is
reproducible from the first ``reset(seed)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from gem_eval.core import Env, ResetResult, StepResult
from gem_eval.errors import VectorEnvError

VectorResetResult = tuple[list[str], list[dict[str, Any]]]
VectorStepResult = tuple[list[str], list[float], list[bool], list[bool], list[dict[str, Any]]]
PartialStepResult = tuple[
    dict[int, str], dict[int, float], dict[int, bool], dict[int, bool], dict[int, dict[str, Any]]
]
Actions = Sequence[str] | Mapping[int, str]
Seeds = int | Sequence[int | None] | None


def _run_all(jobs: Sequence[tuple[int, Any]], run: Any) -> list[Any]:
    """``run(i, arg)`` for every job, even after one fails; then raise the first failure.

    Every sub-env is stepped whatever happens to the others, as in the async vector env.
    """
    results: list[Any] = []
    errors: list[VectorEnvError] = []
    append = results.append  # bound once: this loop runs for every sub-env step
    for i, arg in jobs:
        try:
            append(run(i, arg))
        except VectorEnvError as exc:
            errors.append(exc)
    if errors:
        first = errors[0]
        raise VectorEnvError(
            first.index, first.original, others=len(errors) - 1
        ) from first.original
    return results


def _call(i: int, fn: Any, arg: Any) -> Any:
    """``fn(arg)``, re-raising any exception as a :class:`VectorEnvError` for sub-env ``i``."""
    try:
        return fn(arg)
    except Exception as exc:
        raise VectorEnvError(i, exc) from exc


class AutoresetMode(str, Enum):
    """When a finished sub-env is reset; see the module docstring."""

    NEXT_STEP = "next_step"
    SAME_STEP = "same_step"
    DISABLED = "disabled"


class VectorEnv(ABC):
    """Steps several envs as one. See the module docstring for the exact semantics.

    Args:
        envs: The sub-envs (owned: ``close()`` closes them).
        autoreset_mode: One of :class:`AutoresetMode` (or its string value).
        seed: Default seed for the first ``reset()`` that gets none: sub-env ``i``
            gets ``seed + i``.
    """

    def __init__(
        self,
        envs: Sequence[Env],
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        seed: int | None = None,
    ) -> None:
        if not envs:
            raise ValueError("a vector env needs at least one sub-env")
        self.envs = list(envs)
        self.num_envs = len(self.envs)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self._default_seed = seed
        self._pending_reset = [False] * self.num_envs
        self.closed = False

    @abstractmethod
    def reset(self, seed: Seeds = None, *, indices: Sequence[int] | None = None) -> Any:
        """Reset all sub-envs (or ``indices``); return ``(observations, infos)``."""

    @abstractmethod
    def step(self, actions: Actions) -> Any:
        """Step the sub-envs; lists in, lists out, or a dict in, dicts out."""

    def close(self) -> None:
        """Close every sub-env. Safe to call twice."""
        if not self.closed:
            self.closed = True
            for env in self.envs:
                env.close()

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------- shared bookkeeping
    def _seeds(self, seed: Seeds, indices: Sequence[int]) -> list[int | None]:
        """The seed for each index in ``indices``."""
        if seed is None:
            seed = self._default_seed
        self._default_seed = None  # only the first reset falls back to it
        if seed is None:
            return [None] * len(indices)
        if isinstance(seed, int):
            return [seed + i for i in indices]
        if len(seed) != self.num_envs:
            raise ValueError(f"got {len(seed)} seeds for {self.num_envs} sub-envs")
        return [seed[i] for i in indices]

    def _indices(self, actions: Actions) -> list[tuple[int, str]]:
        """``(index, action)`` pairs, checked against ``num_envs``."""
        if not isinstance(actions, Mapping):
            if isinstance(actions, str) or len(actions) != self.num_envs:
                raise ValueError(
                    f"step() needs {self.num_envs} actions (or a dict index -> action)"
                )
            return list(enumerate(actions))  # one action per sub-env, in order
        pairs = sorted(actions.items())
        for i, _ in pairs:
            if not 0 <= i < self.num_envs:
                raise IndexError(f"sub-env index {i} is out of range 0..{self.num_envs - 1}")
        return pairs

    def _after_reset(self, i: int, result: ResetResult) -> ResetResult:
        self._pending_reset[i] = False
        return result

    def _targets(self, indices: Sequence[int] | None) -> list[int]:
        """The sub-envs a reset addresses, checked against ``num_envs``."""
        targets = list(range(self.num_envs)) if indices is None else list(indices)
        for i in targets:
            if not 0 <= i < self.num_envs:
                raise IndexError(f"sub-env index {i} is out of range 0..{self.num_envs - 1}")
        return targets

    def _reset_all_sync(self, seed: Seeds, indices: Sequence[int] | None) -> VectorResetResult:
        """Reset the sub-envs one after another in this thread."""
        targets = self._targets(indices)
        jobs = list(zip(targets, self._seeds(seed, targets)))
        return self._pack_reset(_run_all(jobs, self._reset_sync))

    def _step_all_sync(self, actions: Actions) -> VectorStepResult | PartialStepResult:
        """Step the sub-envs one after another in this thread."""
        pairs = self._indices(actions)
        results = _run_all(pairs, self._step_sync)
        return self._pack_step(pairs, results, partial=isinstance(actions, Mapping))

    def _reset_sync(self, i: int, seed: int | None) -> ResetResult:
        """Reset sub-env ``i`` in this thread."""
        return self._after_reset(i, _call(i, self.envs[i].reset, seed))

    def _step_sync(self, i: int, action: str) -> StepResult:
        """Step sub-env ``i`` in this thread, autoresetting as the mode says."""
        if self._pending_reset[i]:
            return self._next_step_reset(self._reset_sync(i, None))
        env = self.envs[i]
        try:  # _call(i, env.step, action), unrolled: this runs for every sub-env step
            result: StepResult = env.step(action)
        except Exception as exc:
            raise VectorEnvError(i, exc) from exc
        if (result[2] or result[3]) and self._ends_episode(i, result):
            return self._same_step_reset(result, _call(i, env.reset, None))
        return result

    def _next_step_reset(self, result: ResetResult) -> StepResult:
        """The step result a ``next_step`` autoreset returns."""
        obs, info = result
        return obs, 0.0, False, False, {**info, "autoreset": True}

    def _ends_episode(self, i: int, result: StepResult) -> bool:
        """Record a finished episode; True when it must be reset in this same step."""
        done = result[2] or result[3]
        if done and self.autoreset_mode is AutoresetMode.NEXT_STEP:
            self._pending_reset[i] = True
        return done and self.autoreset_mode is AutoresetMode.SAME_STEP

    @staticmethod
    def _same_step_reset(result: StepResult, reset: ResetResult) -> StepResult:
        """Merge the final step and the reset into what ``same_step`` returns."""
        final_obs, reward, terminated, truncated, final_info = result
        obs, info = reset
        merged = {**info, "final_obs": final_obs, "final_info": final_info}
        return obs, reward, terminated, truncated, merged

    @staticmethod
    def _pack_reset(results: list[ResetResult]) -> VectorResetResult:
        return [r[0] for r in results], [r[1] for r in results]

    @staticmethod
    def _pack_step(
        pairs: list[tuple[int, str]], results: list[StepResult], partial: bool
    ) -> VectorStepResult | PartialStepResult:
        if partial:
            idx = [i for i, _ in pairs]
            return tuple(  # type: ignore[return-value]
                {i: r[k] for i, r in zip(idx, results)} for k in range(5)
            )
        obs, rewards, terminated, truncated, infos = map(list, zip(*results))
        return obs, rewards, terminated, truncated, infos
