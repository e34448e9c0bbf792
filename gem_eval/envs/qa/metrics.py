"""SQuAD-style answer scoring: normalisation, exact match and token F1 over gold answers.

The normalisation is the one of the SQuAD evaluation script: lowercase, drop punctuation,
drop the articles *a*, *an* and *the*, collapse whitespace. One deliberate extension:
besides ASCII punctuation, every Unicode punctuation character (category ``P*``: curly
quotes, dashes, ``«»``) is dropped too, so a model's typography does not cost a point.
Like SQuAD, punctuation is removed without leaving a space: ``2,400`` reads ``2400``.

A question may have several gold answers (aliases such as ``1873`` and ``in 1873``);
an answer's score is its best over them::

    >>> best_match("The Halden Group.", ["Halden Group", "Halden"])
    Match(em=1.0, f1=1.0, gold='Halden Group')
"""

from __future__ import annotations

import contextlib
import json
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


@dataclass(frozen=True)
class Match:
    """How well an answer matches its best gold answer.

    Attributes:
        em: 1.0 when the normalised answer equals the normalised gold, else 0.0.
        f1: Token F1 between the two (1.0 for an exact match).
        gold: The gold answer that scored best (the first listed, on a tie).
    """

    em: float
    f1: float
    gold: str


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def normalize_answer(text: str) -> str:
    """``text`` lowercased, without punctuation, articles or extra whitespace.

    >>> normalize_answer("The  Verran Lighthouse!")
    'verran lighthouse'
    """
    text = "".join(ch for ch in text.lower() if not _is_punctuation(ch))
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str) -> list[str]:
    """The tokens F1 counts: the words of the normalised text."""
    return normalize_answer(text).split()


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the two normalise to the same text, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """Token F1: the harmonic mean of the precision and recall of shared tokens.

    Tokens are counted with repetition (a bag of words). When either side has no tokens
    the score is 1.0 if both have none, else 0.0 (as in SQuAD 2.0).
    """
    predicted, expected = answer_tokens(prediction), answer_tokens(gold)
    if not predicted or not expected:
        return float(predicted == expected)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def best_match(prediction: str, golds: Sequence[str]) -> Match:
    """The score of ``prediction`` against its best gold answer (by EM, then F1).

    Raises:
        ValueError: ``golds`` is empty.
    """
    if not golds:
        raise ValueError("no gold answers to compare with")
    matches = [Match(exact_match(prediction, g), f1_score(prediction, g), g) for g in golds]
    return max(matches, key=lambda m: (m.em, m.f1))  # max keeps the first of equals


def gold_answers(answer: Any) -> list[str]:
    """The gold answers in ``answer``: a string, a number, or a list of them.

    A string holding a JSON list (``'["1873", "in 1873"]'``, as a CSV cell would carry
    several answers) is read as that list.

    Raises:
        ValueError: No answer, a value of another type, or an answer that normalises to
            nothing (``"the"``, ``"?"``), which no extracted answer could ever match.
    """
    if answer is None:
        raise ValueError("no gold answer given")
    if isinstance(answer, str) and answer.lstrip().startswith("["):
        with contextlib.suppress(json.JSONDecodeError):  # else a gold that starts with "["
            answer = json.loads(answer)
    items = list(answer) if isinstance(answer, (list, tuple)) else [answer]
    golds = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ValueError(
                f"a gold answer must be a string or a number, not {type(item).__name__}"
            )
        gold = str(item)
        if not normalize_answer(gold):
            raise ValueError(f"the gold answer {gold!r} is empty once normalised")
        golds.append(gold)
    if not golds:
        raise ValueError("no gold answer given")
    return golds
