"""Generation settings checked before a run: a suite's ``generation:`` and ``-M key=value``.

The settings :class:`~gem_eval.models.base.GenerateConfig` knows are typed here, so that
``-M temperature=abc`` is one line before any episode rather than a failure of every
episode. A key it does not know passes through to the provider unchanged (``-M top_k=20``
for vLLM), as it always has: providers take settings of their own.

::

    check_generation({"temperature": "abc", "top_k": 20}, "-M")
    # ["-M temperature: expected a number >= 0 (got 'abc')"]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gem_eval.errors import UserError


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _stop(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    )


@dataclass(frozen=True)
class _Setting:
    expected: str
    """What the value must be, for the message."""
    valid: Callable[[Any], bool]


SETTINGS: dict[str, _Setting] = {
    "temperature": _Setting("a number >= 0", lambda v: _number(v) and v >= 0),
    "top_p": _Setting("a number above 0, at most 1", lambda v: _number(v) and 0 < v <= 1),
    "max_tokens": _Setting("a whole number >= 1", lambda v: _whole(v) and v >= 1),
    "seed": _Setting("a whole number", _whole),
    "reasoning_effort": _Setting("a string (low, medium, high)", lambda v: isinstance(v, str)),
    "stop": _Setting("a string or a list of strings", _stop),
    "return_tokens": _Setting("true or false", lambda v: isinstance(v, bool)),
    "extra": _Setting("a mapping of provider settings", lambda v: isinstance(v, dict)),
}
"""The settings :class:`~gem_eval.models.base.GenerateConfig` takes, and their types;
``null`` leaves any of them unset."""


def generation_problems(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, message)`` for every known setting of the wrong type or out of range.

    Unknown keys are no problem: they pass through to the provider.
    """
    problems = []
    for key, value in settings.items():
        setting = SETTINGS.get(key)
        if setting is not None and value is not None and not setting.valid(value):
            problems.append((key, f"expected {setting.expected} (got {_show(value)})"))
    return problems


def check_generation(settings: Mapping[str, Any], where: str = "-M") -> list[str]:
    """One line per bad setting, ``"{where} {key}: {message}"`` (none when all is well).

    Args:
        settings: Generation settings, as ``-M`` parses them or a task holds them.
        where: What names them in the messages (``-M``, ``generation``).
    """
    return [f"{where} {key}: {message}" for key, message in generation_problems(settings)]


def ensure_generation(settings: Mapping[str, Any], where: str = "-M") -> None:
    """Raise when :func:`check_generation` finds anything.

    Raises:
        UserError: Every bad setting, on one line (``; `` between them).
    """
    lines = check_generation(settings, where)
    if lines:
        raise UserError("; ".join(lines))


def _show(value: Any) -> str:
    if isinstance(value, (str, int, float, bool)):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(value).__name__}"
