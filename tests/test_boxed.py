from __future__ import annotations

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
