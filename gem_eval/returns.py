"""Returns of a sequence of per-turn rewards: the one definition the whole package uses.

A turn (a *transition*) is one action of the agent and what answered it. Its return-to-go
is ``G_t = r_t + gamma * G_{t+1}`` (``G_T = 0`` past the last turn), so ``G_0`` is the
episode's discounted return ``sum(gamma**t * r_t)``. Worked example, ``gamma = 0.9`` and
rewards ``[0, 0, 1]``: ``G_2 = 1``, ``G_1 = 0 + 0.9 * 1 = 0.9``, ``G_0 = 0 + 0.9 * 0.9 =
0.81``. A discount below 1 makes the same success worth more when it comes in fewer turns.
"""

from __future__ import annotations

from collections.abc import Sequence


def check_gamma(gamma: float) -> float:
    """``gamma`` if it is a discount factor in ``[0, 1]``, else :class:`ValueError`."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], not {gamma}")
    return gamma


def returns_to_go(rewards: Sequence[float], gamma: float) -> list[float]:
    """``G_t`` of every turn, in order (see the module docstring)."""
    check_gamma(gamma)
    out = [0.0] * len(rewards)
    total = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        total = rewards[t] + gamma * total
        out[t] = total
    return out


def discounted_return(rewards: Sequence[float], gamma: float) -> float:
    """``G_0 = sum(gamma**t * r_t)``, the return seen from the first turn."""
    return returns_to_go(rewards, gamma)[0] if rewards else 0.0


class Returns:
    """Mixin for episode types: ``total_return``, ``discounted_return`` and
    ``returns_to_go`` of the ``rewards`` the episode lists, one per turn."""

    @property
    def rewards(self) -> list[float]:
        raise NotImplementedError

    @property
    def total_return(self) -> float:
        return sum(self.rewards)

    def discounted_return(self, gamma: float) -> float:
        return discounted_return(self.rewards, gamma)

    def returns_to_go(self, gamma: float) -> list[float]:
        return returns_to_go(self.rewards, gamma)
