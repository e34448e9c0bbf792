"""``EpisodeStats``: turns, return and discounted return of each episode."""

from __future__ import annotations

from typing import Any

from gem_eval.core import Env, ResetResult, StepResult, Wrapper
from gem_eval.returns import check_gamma, discounted_return


class EpisodeStats(Wrapper):
    """Record per-turn rewards; report the episode when it ends.

    The info of the last step carries ``info["episode"]``::

        {"turns": 4, "return": 1.0, "discounted_return": 0.97, "gamma": 0.99,
         "rewards": [0.1, 0.2, 0.2, 0.5]}

    Args:
        env: The env to watch.
        gamma: Discount factor in ``[0, 1]``.
    """

    def __init__(self, env: Env, gamma: float = 1.0) -> None:
        super().__init__(env)
        self.gamma = check_gamma(gamma)
        self.rewards: list[float] = []

    def on_reset(self, result: ResetResult) -> ResetResult:
        self.rewards = []
        return result

    def on_step(self, action: str, result: StepResult) -> StepResult:
        self.rewards.append(result[1])
        if not (result[2] or result[3]):
            return result
        obs, reward, terminated, truncated, info = result
        return obs, reward, terminated, truncated, {**info, "episode": self.summary()}

    def summary(self) -> dict[str, Any]:
        """The statistics of the episode so far."""
        return {
            "turns": len(self.rewards),
            "return": sum(self.rewards),
            "discounted_return": discounted_return(self.rewards, self.gamma),
            "gamma": self.gamma,
            "rewards": list(self.rewards),
        }
