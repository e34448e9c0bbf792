"""The QA family (``qa:*``): short-answer questions scored by exact match and token F1.

:class:`QAEnv` is ``qa:QA-v0``; :mod:`gem_eval.envs.qa.metrics` holds the SQuAD-style
scoring; :mod:`gem_eval.envs.qa.wiki` builds a larger search corpus from Wikipedia
extracts (an optional package).
"""

from __future__ import annotations

from gem_eval.envs.qa.env import QAEnv, extract_answer
from gem_eval.envs.qa.metrics import (
    Match,
    answer_tokens,
    best_match,
    exact_match,
    f1_score,
    gold_answers,
    normalize_answer,
)

__all__ = [
    "Match",
    "QAEnv",
    "answer_tokens",
    "best_match",
    "exact_match",
    "extract_answer",
    "f1_score",
    "gold_answers",
    "normalize_answer",
]
