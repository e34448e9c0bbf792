"""Math answers as strings: read one out of model output, normalise it, compare two.

Where the answer is read (:func:`extract_answer`), first found wins:

1. The last complete ``\\boxed{...}`` or ``\\fbox{...}`` (braces nest; ``\\{`` and ``\\}``
   are literal braces, not grouping). An unclosed box is skipped in favour of an earlier
   complete one.
2. Unless ``boxed_only``: the last ``<answer>...</answer>`` pair.
3. Unless ``boxed_only``: the rest of the line after the last "final answer is",
   "answer is", "answer:" (any case, ``**bold**`` allowed), with a trailing period and
   surrounding ``$`` removed.

Nothing else counts: a bare last number or a final ``= X`` line is not read, because
it is as often a step of the working as the answer. ``None`` (also for an empty answer,
``\\boxed{}``) means a format error.

:func:`normalize` is string-level and conservative: two answers with equal normal forms
are equal; unequal forms prove nothing. :func:`string_verdict` is the grader's fast path
built on it: it decides what strings alone can decide and leaves the rest to
``math-verify``. :func:`gold_answer` reads a dataset's gold column: a plain answer, a
worked solution ending in ``\\boxed{...}`` (MATH), or one ending in ``#### X`` (GSM8K).
"""

from __future__ import annotations

import re
from typing import Any

_BOX_TOKENS = re.compile(r"\\(?:boxed|fbox)\s*\{|\\.|[{}]", re.DOTALL)
_TAGGED = re.compile(r"<answer\s*>(.*?)</answer\s*>", re.IGNORECASE | re.DOTALL)
_CLOSE_TAG = re.compile(r"</answer\s*>", re.IGNORECASE)
_PHRASE = re.compile(
    r"(?:final\s+answer\s*(?:is|:)|answer\s+is|answer\s*:)[\s*:]*(?P<rest>[^\n]*)",
    re.IGNORECASE,
)

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_WRAPPER = r"\\(?:text|textbf|textrm|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}"
_SPACING = re.compile(
    r"(\\\\)|\\(?:left|right|displaystyle|bigl|bigr|Bigl|Bigr)(?![A-Za-z])|\\[!,;: ]|~"
)
_DOLLAR = re.compile(r"\\\$|\$")
_DEGREES = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|\\degree")
_PERCENT = re.compile(r"\s*\\?%$")
_UNIT_TEXT = re.compile(rf"^({_NUMBER})\s*{_WRAPPER}(?:\^\{{?\d\}}?)?$")
_UNIT_WORDS = re.compile(rf"^({_NUMBER})\s+([A-Za-z]{{2,}}(?:[ /][A-Za-z]+)*)(?:\^\{{?\d\}}?)?$")
_MATH_WORDS = frozenset({"pi", "sqrt", "sin", "cos", "tan", "log", "ln", "exp", "infty"})
_WHOLE_WRAPPER = re.compile(rf"^{_WRAPPER}$")
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_TRAILING_ZEROS = re.compile(r"^([-+]?\d+)\.(\d*?)0*$")
_FRAC_DIGITS = re.compile(r"\\frac(\d)(\d)")
_SQRT_DIGIT = re.compile(r"\\sqrt(\d)")
_INTEGER_CHARS = 200  # int() of longer digit strings is slow (and limited in Python 3.11)


def last_boxed(text: str) -> str | None:
    """The content of the last complete ``\\boxed{...}`` or ``\\fbox{...}`` in ``text``.

    One pass over ``text`` (no quadratic rescans of unclosed boxes). ``None`` when no box
    is complete.
    """
    stack: list[int | None] = []  # per open group: the content start of a box, else None
    best: tuple[int, int] | None = None
    for token in _BOX_TOKENS.finditer(text):
        lexeme = token.group()
        if lexeme == "{":
            stack.append(None)
        elif lexeme == "}":
            start = stack.pop() if stack else None
            if start is not None and (best is None or start > best[0]):
                best = (start, token.start())
        elif lexeme[-1] == "{" and lexeme[1] in "bf":  # \boxed{ or \fbox{, not \{
            stack.append(token.end())
    return None if best is None else text[best[0] : best[1]].strip()


def extract_answer(text: str, *, boxed_only: bool = False) -> str | None:
    """The final answer written in ``text``, or ``None`` (see the module docstring).

    Args:
        text: The model's action.
        boxed_only: Read ``\\boxed{}``/``\\fbox{}`` only, no fallbacks.
    """
    boxed = last_boxed(text)
    if boxed is not None or boxed_only:
        return boxed or None
    closings = list(_CLOSE_TAG.finditer(text))
    if closings:  # search up to the last closing tag only: linear time, whatever follows
        tagged = _TAGGED.findall(text, 0, closings[-1].end())
        if tagged:
            return _strip_math_delimiters(tagged[-1]) or None
    phrases = list(_PHRASE.finditer(text))
    if phrases:
        return _strip_math_delimiters(phrases[-1].group("rest").strip().rstrip(".")) or None
    return None


def gold_answer(answer: Any) -> str | None:
    """The gold answer of a dataset row as a string, or ``None`` when there is none.

    Numbers become strings; a worked solution gives its last ``\\boxed{}`` (MATH) or what
    follows its last ``####`` (GSM8K).
    """
    if answer is None or isinstance(answer, bool):
        return None
    text = str(answer).strip()
    if "\\boxed" in text or "\\fbox" in text:
        boxed = last_boxed(text)
        if boxed is not None:
            return boxed
    if "####" in text:
        text = text.rsplit("####", 1)[1].strip()
    return text or None


def normalize(answer: str) -> str:
    """A canonical string form of an answer, for exact comparison and for display.

    Removes math delimiters, spacing commands, ``\\left``/``\\right``, dollar signs,
    degree marks, a trailing ``%`` and period, unit text after a number (``5 cm``,
    ``5\\text{ cm}``), a ``\\text{}`` wrapping the whole answer, thousands separators,
    trailing decimal zeros and all whitespace; spells ``\\dfrac``/``\\tfrac`` as
    ``\\frac`` and ``\\frac12`` as ``\\frac{1}{2}``.
    """
    s = _strip_math_delimiters(answer.strip())
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("{,}", ",")
    s = _SPACING.sub(lambda m: m.group(1) or " ", s)  # a LaTeX line break stays
    s = _DOLLAR.sub("", s)
    s = _DEGREES.sub("", s)
    s = _PERCENT.sub("", s.strip()).strip().rstrip(".").strip()
    s = _UNIT_TEXT.sub(r"\1", s)
    words = _UNIT_WORDS.match(s)
    if words and not _MATH_WORDS.intersection(words.group(2).lower().split()):
        s = words.group(1)
    whole = _WHOLE_WRAPPER.match(s)
    if whole:
        s = whole.group(1)
    s = re.sub(r"\s+", "", s)
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    zeros = _TRAILING_ZEROS.match(s)
    if zeros:
        s = f"{zeros.group(1)}.{zeros.group(2)}" if zeros.group(2) else zeros.group(1)
    s = _FRAC_DIGITS.sub(r"\\frac{\1}{\2}", s)
    s = _SQRT_DIGIT.sub(r"\\sqrt{\1}", s)
    return s[1:] if s.startswith("+") else s


def string_verdict(gold: str, pred: str) -> bool | None:
    """Whether ``pred`` equals ``gold``, decided from the strings alone, or ``None``.

    Equal normal forms are equal; two plain integers compare as numbers; a gold answer in
    words (``Monday``, ``\\text{odd}``) compares as text, case-insensitively (math-verify
    would read ``Monday`` as a product of six symbols, equal to ``Dynamo``). Anything
    else is ``None``: it takes math-verify.
    """
    norm_gold, norm_pred = normalize(gold), normalize(pred)
    if norm_gold == norm_pred:
        return True
    if not norm_pred:
        return False
    if _is_integer(norm_gold) and _is_integer(norm_pred):
        return int(norm_gold) == int(norm_pred)
    worded = len(norm_gold) >= 4 or gold.lstrip().startswith(("\\text", "\\mbox"))
    if worded and norm_gold.isascii() and norm_gold.isalpha():
        return norm_gold.lower() == norm_pred.lower()
    return None


def balanced_braces(text: str) -> bool:
    """Every ``{`` of ``text`` is closed, in order (``\\{``, ``\\}`` are not grouping)."""
    depth = 0
    for char in text.replace("\\\\", "").replace("\\{", "").replace("\\}", ""):
        depth += (char == "{") - (char == "}")
        if depth < 0:
            return False
    return depth == 0


def _is_integer(text: str) -> bool:
    digits = text[1:] if text[:1] == "-" else text
    return 0 < len(digits) <= _INTEGER_CHARS and digits.isascii() and digits.isdigit()


def _strip_math_delimiters(text: str) -> str:
    """``$x$``, ``$$x$$``, ``\\(x\\)``, ``\\[x\\]`` -> ``x``."""
    s = text.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if len(s) >= len(left) + len(right) and s.startswith(left) and s.endswith(right):
            return s[len(left) : len(s) - len(right)].strip()
    return s
