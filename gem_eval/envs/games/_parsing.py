"""Lenient readers for the moves written inside ``\\boxed{}``, shared by the games."""

from __future__ import annotations

import re

from gem_eval.envs.games._base import MoveError

DIRECTIONS = ("up", "down", "left", "right")
_ALIASES = {"u": "up", "d": "down", "l": "left", "r": "right"}
_ARROWS = {"↑": "up", "↓": "down", "←": "left", "→": "right"}
_WORD = re.compile(r"[a-z]+")
_PUNCT = re.compile(r"[\s,;:()\[\]=]+")
_TOKEN = re.compile(r"[a-z]+|[0-9]+")
_PLAIN = re.compile(r"[a-z0-9 ]*")
MAX_DIGITS = 6  # longer numbers are never moves; refusing them keeps int() cheap


def tokenize(text: str, expected: str) -> list[str]:
    """Split a move into lowercase words and digit runs; punctuation separates.

    ``"Reveal (3, 4)"`` gives ``["reveal", "3", "4"]``; ``"r1c2=3"`` gives
    ``["r", "1", "c", "2", "3"]``.

    Raises:
        MoveError: ``text`` holds characters other than letters, digits and
            punctuation, or a number longer than :data:`MAX_DIGITS` (the message is
            ``expected``).
    """
    plain = _PUNCT.sub(" ", text.lower()).strip()
    if not _PLAIN.fullmatch(plain):
        raise MoveError(expected)
    tokens = _TOKEN.findall(plain)
    if any(t.isdigit() and len(t) > MAX_DIGITS for t in tokens):
        raise MoveError(expected)
    return tokens


def parse_direction(text: str) -> str:
    """Read one of up/down/left/right (also u/d/l/r or an arrow) from ``text``.

    Raises:
        MoveError: No direction, or more than one different one.
    """
    lowered = text.lower()
    words: list[str] = _WORD.findall(lowered)
    found = {_ALIASES.get(w, w) for w in words} & set(DIRECTIONS)
    found |= {name for arrow, name in _ARROWS.items() if arrow in lowered}
    if len(found) != 1:
        raise MoveError("expected one direction: up, down, left or right")
    return found.pop()
