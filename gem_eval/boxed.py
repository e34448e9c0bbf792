"""Find answers written as ``\\boxed{...}`` in model output."""

from __future__ import annotations

import re

_BOXED = re.compile(r"\\boxed\s*\{")
_FLAT_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")  # a box holding no braces


def last_boxed(text: str) -> str | None:
    """Return the content of the last complete ``\\boxed{...}`` in ``text``.

    Braces nest (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``). A ``\\boxed{`` that is
    never closed is skipped in favour of an earlier complete one. Returns ``None`` when
    there is no complete box.
    """
    # Most answers hold no nested braces in their last box: read that one directly (the
    # scan below gives the same answer, at several times the cost).
    last = text.rfind("\\boxed")
    if last < 0:
        return None
    flat = _FLAT_BOXED.match(text, last)
    if flat is not None:
        return flat[1].strip()
    for match in reversed(list(_BOXED.finditer(text))):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[start:i].strip()
    return None
