"""Advantage estimators: how much credit each transition of a batch gets.

A batch is flat arrays with one entry per transition (one action and what answered it,
see :mod:`gem_eval.returns`): its return-to-go ``G_t`` and the episode it belongs to.
Each estimator maps a batch to one advantage ``A_t`` per transition, which a
policy-gradient step multiplies into ``grad log pi(a_t | s_t)``:

* ``reinforce``: ``A_t = G_t``.
* ``reinforce_baseline``: ``A_t = G_t - mean(G)``, the mean over the batch's transitions.
* ``rebn`` (Return Batch Normalization, the GEM paper):
  ``A_t = (G_t - mean(G)) / (std(G) + eps)`` over all transitions of the batch.
* ``grpo``: the episode's return ``G_0`` normalised within its group (the episodes of the
  same prompt or seed), ``A = (G_0 - mean_group) / (std_group + eps)``, broadcast to
  every turn of the episode. It ignores the per-turn structure: with dense per-turn
  rewards and ``gamma < 1`` every turn of an episode gets the same credit, whatever
  came before it, and a turn's own reward counts no more than the others'.

Conventions: ``std`` is the population standard deviation (``ddof=0``). A batch (for
GRPO: a group) whose returns are all equal has advantage 0 exactly, which covers a
batch of one transition and a GRPO group of one episode: they carry no signal.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gem_eval.errors import UserError, did_you_mean
from gem_eval.returns import returns_to_go

EPS = 1e-6

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Transitions:
    """One batch of transitions as flat arrays (index ``i`` is one transition).

    Attributes:
        returns: ``G_t`` of each transition (from :func:`gem_eval.returns.returns_to_go`).
        episode: The episode each transition belongs to (any integer ids). An episode's
            transitions must appear in turn order, as rollouts write them.
        group: GRPO's group key of each transition (prompt, task or seed id; the same
            for every transition of an episode). Only ``grpo`` needs it.
        episode_return: ``G_0`` of each transition's episode. ``None``: the return of
            the episode's first transition in the batch, which is ``G_0`` when the batch
            holds whole episodes.
    """

    returns: FloatArray
    episode: NDArray[Any]
    group: NDArray[Any] | None = None
    episode_return: FloatArray | None = None

    def __post_init__(self) -> None:
        n = self.returns.shape
        if self.returns.ndim != 1 or self.episode.shape != n:
            raise ValueError("returns and episode must be 1-D arrays of the same length")
        for name in ("group", "episode_return"):
            value = getattr(self, name)
            if value is not None and value.shape != n:
                raise ValueError(f"{name} must have one entry per transition, like returns")
        if not np.all(np.isfinite(self.returns)):
            raise ValueError("returns must be finite")

    @classmethod
    def of(
        cls,
        returns: ArrayLike,
        episode: ArrayLike,
        group: ArrayLike | None = None,
        episode_return: ArrayLike | None = None,
    ) -> Transitions:
        """Build a batch from plain arrays or lists (converted, then checked)."""
        return cls(
            returns=np.asarray(returns, dtype=np.float64),
            episode=np.asarray(episode),
            group=None if group is None else np.asarray(group),
            episode_return=None
            if episode_return is None
            else np.asarray(episode_return, dtype=np.float64),
        )

    @classmethod
    def from_episodes(
        cls,
        rewards: Sequence[Sequence[float]],
        gamma: float,
        groups: Sequence[Hashable] | None = None,
    ) -> Transitions:
        """Flatten whole episodes: per-turn ``rewards`` of each, discounted by ``gamma``.

        Args:
            rewards: One list of per-turn rewards per episode (episode ``k`` is index ``k``).
            gamma: The discount of :func:`gem_eval.returns.returns_to_go`.
            groups: One group key per episode (for ``grpo``), or ``None``.
        """
        if groups is not None and len(groups) != len(rewards):
            raise ValueError("groups must have one key per episode")
        returns: list[float] = []
        episode: list[int] = []
        group: list[Any] = []
        for k, episode_rewards in enumerate(rewards):
            returns += returns_to_go(episode_rewards, gamma)
            episode += [k] * len(episode_rewards)
            if groups is not None:
                group += [groups[k]] * len(episode_rewards)
        return cls.of(returns, np.asarray(episode, dtype=np.int64), group or None)


def reinforce(batch: Transitions) -> FloatArray:
    """Vanilla REINFORCE: ``A_t = G_t``."""
    return batch.returns.astype(np.float64, copy=True)


def reinforce_baseline(batch: Transitions) -> FloatArray:
    """REINFORCE with the batch-mean baseline: ``A_t = G_t - mean(G)``."""
    if _all_equal(batch.returns):
        return np.zeros_like(batch.returns)
    out: FloatArray = batch.returns - batch.returns.mean()
    return out


def rebn(batch: Transitions, eps: float = EPS) -> FloatArray:
    """Return Batch Normalization: ``A_t = (G_t - mean(G)) / (std(G) + eps)``."""
    g = batch.returns
    if _all_equal(g):
        return np.zeros_like(g)
    out: FloatArray = (g - g.mean()) / (g.std() + eps)
    return out


def grpo(batch: Transitions, eps: float = EPS) -> FloatArray:
    """GRPO: each episode's ``G_0`` normalised within its group, broadcast to its turns.

    Raises:
        ValueError: ``batch.group`` is missing, or an episode's transitions disagree on
            their group or episode return.
    """
    if batch.group is None:
        raise ValueError("grpo needs a group key per transition (Transitions.group)")
    if batch.returns.size == 0:
        return np.zeros(0)
    _, first, ep_of = np.unique(batch.episode, return_index=True, return_inverse=True)
    ep_of = ep_of.reshape(-1)
    source = batch.returns if batch.episode_return is None else batch.episode_return
    ep_return = source[first]
    if batch.episode_return is not None and np.any(batch.episode_return != ep_return[ep_of]):
        raise ValueError("episode_return differs between transitions of one episode")
    ep_group = batch.group[first]
    if np.any(batch.group != ep_group[ep_of]):
        raise ValueError("group differs between transitions of one episode")
    _, group_of = np.unique(ep_group, return_inverse=True)
    group_of = group_of.reshape(-1)
    count = np.bincount(group_of)
    mean = np.bincount(group_of, weights=ep_return) / count
    std = np.sqrt(np.bincount(group_of, weights=(ep_return - mean[group_of]) ** 2) / count)
    low = np.full(count.size, np.inf)
    high = np.full(count.size, -np.inf)
    np.minimum.at(low, group_of, ep_return)
    np.maximum.at(high, group_of, ep_return)
    flat = (low == high)[group_of]  # exact: float noise in mean/std cannot leak through
    ep_adv = np.where(flat, 0.0, (ep_return - mean[group_of]) / (std[group_of] + eps))
    out: FloatArray = ep_adv[ep_of]
    return out


def _all_equal(values: FloatArray) -> bool:
    return values.size == 0 or bool(values.min() == values.max())


Estimator = Callable[[Transitions], FloatArray]

ESTIMATORS: dict[str, Estimator] = {
    "reinforce": reinforce,
    "reinforce_baseline": reinforce_baseline,
    "rebn": rebn,
    "grpo": grpo,
}


def advantages(name: str, batch: Transitions) -> FloatArray:
    """The advantages of ``batch`` under the estimator called ``name`` (see ESTIMATORS).

    Raises:
        UserError: ``name`` is not an estimator.
    """
    try:
        estimator = ESTIMATORS[name]
    except KeyError:
        known = ", ".join(ESTIMATORS)
        hint = did_you_mean(name, ESTIMATORS)
        raise UserError(f"unknown estimator {name!r}: choose one of {known}.{hint}") from None
    return estimator(batch)
