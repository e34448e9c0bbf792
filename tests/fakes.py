"""A fake env most core tests drive, and small helpers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gem_eval.core import Env, ResetResult, StepResult


class FakeEnv(Env):
    """An env whose episodes last ``length`` steps.

    reset: observation ``"start <draw>"`` where draw comes from the env's rng (so
    seeding is visible); step k (1-based): observation ``"<action>@<k>"``, reward k,
    terminated at k == length. ``step_fn`` replaces step when given; ``fail_at``
    makes step number k raise RuntimeError.
    """

    def __init__(
        self,
        length: int = 3,
        fail_at: int | None = None,
        step_fn: Callable[[FakeEnv, str], StepResult] | None = None,
    ) -> None:
        super().__init__()
        self.length = length
        self.fail_at = fail_at
        self.step_fn = step_fn
        self.k = 0
        self.resets = 0
        self.closed = False

    def reset(self, seed: int | None = None) -> ResetResult:
        super().reset(seed)
        self.k = 0
        self.resets += 1
        return f"start {self.rng.randint(0, 10**9)}", {"resets": self.resets}

    def step(self, action: str) -> StepResult:
        if self.step_fn is not None:
            return self.step_fn(self, action)
        self.k += 1
        if self.fail_at == self.k:
            raise RuntimeError(f"boom at step {self.k}")
        return f"{action}@{self.k}", float(self.k), self.k >= self.length, False, {"k": self.k}

    def close(self) -> None:
        self.closed = True


def run_to_end(env: Env, action: str = "a") -> list[Any]:
    """Step ``env`` until the episode ends; return every step result."""
    results = []
    while True:
        result = env.step(action)
        results.append(result)
        if result[2] or result[3]:
            return results
