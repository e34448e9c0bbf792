"""The word list shipped with the package (SCOWL size 35; see data/WORDS_LICENSE)."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def _all_words() -> tuple[str, ...]:
    text = resources.files("gem_eval.envs.games").joinpath("data/words.txt").read_text("ascii")
    return tuple(text.split())


@cache
def words(length: int) -> tuple[str, ...]:
    """All lowercase words of ``length`` letters (3 to 8), sorted."""
    found = tuple(w for w in _all_words() if len(w) == length)
    if not found:
        raise ValueError(f"no words of length {length}: the list holds lengths 3 to 8")
    return found


@cache
def word_set(length: int) -> frozenset[str]:
    """``words(length)`` as a set, for membership tests."""
    return frozenset(words(length))
