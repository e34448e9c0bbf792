from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gem_eval.boxed import last_boxed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the answer is \\boxed{42}", "42"),
        ("\\boxed{1} then \\boxed{2}", "2"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed { up }", "up"),
        ("\\boxed{3} and an unclosed \\boxed{4", "3"),
        ("no box here", None),
        ("\\boxed{", None),
        ("\\boxed{}", ""),
    ],
)
def test_last_boxed(text: str, expected: str | None) -> None:
    assert last_boxed(text) == expected


@given(st.text())
def test_last_boxed_never_raises(text: str) -> None:
    result = last_boxed(text)
    assert result is None or result in text


def scanned(text: str) -> str | None:
    """``last_boxed`` without its shortcut: every box from the last, braces counted."""
    for start in reversed([m.end() for m in re.finditer(r"\\boxed\s*\{", text)]):
        depth = 1
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                return text[start:i].strip()
    return None


PIECES = ["\\boxed", "\\boxed{", "\\boxed {", "{", "}", " ", "\n", "7", "x", "\\"]


@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
def test_the_shortcut_for_flat_boxes_agrees_with_the_scan(text: str) -> None:
    assert last_boxed(text) == scanned(text)
