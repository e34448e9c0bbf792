"""Play one episode of an env with a policy and keep its transcript."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gem_eval.core import Env
from gem_eval.policies import Policy
from gem_eval.wrappers.episode_stats import Returns


@dataclass
class Turn:
    """One agent action and what the env answered."""

    action: str
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass
class Episode(Returns):
    """A finished (or cut-off) episode: the first observation and every turn."""

    env_id: str
    seed: int | None
    observation: str
    info: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)

    @property
    def rewards(self) -> list[float]:
        return [t.reward for t in self.turns]

    @property
    def success(self) -> bool:
        return bool(self.turns and self.turns[-1].info.get("success"))

    @property
    def done(self) -> bool:
        return bool(self.turns) and (self.turns[-1].terminated or self.turns[-1].truncated)


def rollout(
    env: Env,
    policy: Policy,
    seed: int | None = None,
    max_turns: int = 1000,
    on_turn: Callable[[Episode], None] | None = None,
) -> Episode:
    """Reset ``env`` with ``seed`` and let ``policy`` act until the episode ends.

    Args:
        env: The env to play.
        policy: Picks each action.
        seed: Passed to ``env.reset``.
        max_turns: A safety stop for envs without a turn limit of their own.
        on_turn: Called with the episode after the reset and after every turn
            (the CLI renders as the game goes).
    """
    obs, info = env.reset(seed)
    episode = Episode(getattr(env.spec, "id", str(env)), seed, obs, info)
    if on_turn:
        on_turn(episode)
    while not episode.done and len(episode.turns) < max_turns:
        action = policy(obs, env)
        obs, reward, terminated, truncated, info = env.step(action)
        episode.turns.append(Turn(action, obs, reward, terminated, truncated, info))
        if on_turn:
            on_turn(episode)
    return episode
