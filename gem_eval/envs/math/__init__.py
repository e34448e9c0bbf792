"""The math family (``math:*``): a question, a ``\\boxed{}`` answer, symbolic equivalence.

Importing this package is cheap: ``math_verify`` is loaded only in the grader's worker
processes (:mod:`gem_eval.envs.math.grader`).
"""

from __future__ import annotations

from gem_eval.envs.math.env import MathEnv
from gem_eval.envs.math.extract import (
    extract_answer,
    gold_answer,
    last_boxed,
    normalize,
    string_verdict,
)
from gem_eval.envs.math.grader import GraderPool, grade_answer, shared_pool

__all__ = [
    "GraderPool",
    "MathEnv",
    "extract_answer",
    "gold_answer",
    "grade_answer",
    "last_boxed",
    "normalize",
    "shared_pool",
    "string_verdict",
]
