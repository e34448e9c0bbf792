"""``MaxTurns``: truncate an episode after a number of agent turns."""

from __future__ import annotations

from gem_eval.core import Env, ResetResult, StepResult, Wrapper


class MaxTurns(Wrapper):
    """End the episode with ``truncated=True`` after ``max_turns`` steps.

    A step that terminates the episode on its own is left as it is. The info of the
    step that truncates carries ``"truncated_by": "max_turns"``.
    """

    def __init__(self, env: Env, max_turns: int) -> None:
        super().__init__(env)
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.max_turns = max_turns
        self.elapsed = 0

    def turn_limit(self) -> int | None:
        inner = self.env.turn_limit()
        return self.max_turns if inner is None else min(inner, self.max_turns)

    def on_reset(self, result: ResetResult) -> ResetResult:
        self.elapsed = 0
        return result

    def on_step(self, action: str, result: StepResult) -> StepResult:
        self.elapsed += 1
        if self.elapsed < self.max_turns or result[2] or result[3]:
            return result  # the hot path: pass the tuple on untouched
        obs, reward, terminated, _, info = result
        return obs, reward, terminated, True, {**info, "truncated_by": "max_turns"}
