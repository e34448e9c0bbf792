"""Estimate a run before spending: per model and task, the episodes, model calls,
tokens, USD and wall time, from earlier runs of the suite or from its limits as bounds.

    specs = suite.episodes(models, ...)
    estimate = estimate_run(specs, results_dir=root, concurrency=64, suite=suite.name)
    reason = estimate.exceeds(5.0)  # None: under $5
"""

from __future__ import annotations

from gem_eval.estimate.run import Amount, RowEstimate, RunEstimate, estimate_run

__all__ = ["Amount", "RowEstimate", "RunEstimate", "estimate_run"]
