"""The runner: plays a run's episodes through an executor and records them."""

from __future__ import annotations

from gem_eval.runner.executor import Executor, LocalExecutor
from gem_eval.runner.runner import (
    EXIT_BUDGET,
    EXIT_CONFIG_ERROR,
    EXIT_HARNESS_ERROR,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Runner,
    RunSummary,
)
from gem_eval.runner.scoring import score, to_record

__all__ = [
    "EXIT_BUDGET",
    "EXIT_CONFIG_ERROR",
    "EXIT_HARNESS_ERROR",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "Executor",
    "LocalExecutor",
    "RunSummary",
    "Runner",
    "score",
    "to_record",
]
