"""Experience for reinforcement learning: advantage estimators over batches of transitions.

``advantages("rebn", Transitions.of(returns, episode))`` is the whole API a trainer needs
from here; :mod:`gem_eval.returns` defines the returns it consumes.
"""

from __future__ import annotations

from gem_eval.rl.estimators import (
    EPS,
    ESTIMATORS,
    Transitions,
    advantages,
    grpo,
    rebn,
    reinforce,
    reinforce_baseline,
)

__all__ = [
    "EPS",
    "ESTIMATORS",
    "Transitions",
    "advantages",
    "grpo",
    "rebn",
    "reinforce",
    "reinforce_baseline",
]
