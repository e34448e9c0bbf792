"""Find answers written as ``\\boxed{...}`` in model output."""

from __future__ import annotations

import re

_BOXED = re.compile(r"\\boxed\s*\{")


def last_boxed(text: str) -> str | None:
    """Return the content of the last complete ``\\boxed{...}`` in ``text``.

    Braces nest (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``). A ``\\boxed{`` that is
    never closed is skipped in favour of an earlier complete one. Returns ``None`` when
    there is no complete box.
    """
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
