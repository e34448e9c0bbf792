"""Statistics, leaderboards and run comparison over per-episode frames.

Importing this package is cheap: numpy, pandas and scipy are imported where they are used.
"""

from __future__ import annotations

from gem_eval.metrics.compare import (
    Comparison,
    GateVerdict,
    RunCounts,
    TaskDiff,
    compare_runs,
    gate,
)
from gem_eval.metrics.stats import (
    CI,
    McNemarResult,
    PairedDiff,
    bootstrap_ci,
    mcnemar,
    mean_se,
    paired_bootstrap_diff,
    pass_at_k,
    pass_hat_k,
)
from gem_eval.metrics.summary import summarize
from gem_eval.outcomes import ERROR_OUTCOMES, SCORED_OUTCOMES

__all__ = [
    "CI",
    "ERROR_OUTCOMES",
    "SCORED_OUTCOMES",
    "Comparison",
    "GateVerdict",
    "McNemarResult",
    "PairedDiff",
    "RunCounts",
    "TaskDiff",
    "bootstrap_ci",
    "compare_runs",
    "gate",
    "mcnemar",
    "mean_se",
    "paired_bootstrap_diff",
    "pass_at_k",
    "pass_hat_k",
    "summarize",
]
