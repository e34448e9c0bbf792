"""What a terminal task's tests said: pytest's summary (TB1) and the reward file (TB2)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

_SUMMARY = re.compile(r"=+\s*short test summary info\s*=+")
_FIRST_SUMMARY = re.compile(r"^=+\s*short test summary info\s*=+\s*$", re.MULTILINE)
# A skip reads `SKIPPED [1] tests/t.py:4: reason` (no test name): keyed by its place.
_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(?:\[\d+\]\s+)?(\S+?):?(?:\s|$)")
# As Terminal-Bench counts them: an expected failure or a skip is not a failure.
PASSING = ("PASSED", "XFAIL", "SKIPPED")


def parse_pytest(output: str, worst: bool = True) -> dict[str, str] | None:
    """Each test's status from the ``short test summary info`` of ``pytest -rA``.

    Keys are test names without the file (``test_outputs.py::test_x`` -> ``test_x``);
    ``None`` when the output has no summary (pytest did not run, or crashed).

    Text the agent controls can reach the summary: a failure's message, printed whole
    under ``-vv`` or ``CI=1`` (``FAILED t.py::test_x - got: <the agent's file>``), may
    hold lines that read ``PASSED t.py::test_x``. So every status line from pytest's
    first summary on is read, and a test listed more than once keeps its worst status:
    a forged line can add a pass, never hide a failure. ``worst=False`` reads the last
    summary and lets a later line win (gem-eval's reading before this was fixed).
    """
    if worst:
        first = _FIRST_SUMMARY.search(output)
        text = output[first.end() :] if first else None
    else:
        parts = _SUMMARY.split(output)
        text = parts[-1] if len(parts) >= 2 else None
    if text is None:
        return None
    statuses: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match:
            status, test = match.groups()
            name = test.split("::", 1)[-1]
            if not (worst and statuses.get(name, "PASSED") not in PASSING):
                statuses[name] = status
    return statuses


def pytest_reward(
    statuses: dict[str, str] | None, weights: dict[str, float]
) -> tuple[float, dict[str, Any]]:
    """``(reward, info)`` of a TB1 test run: 1.0 when every test passed (or, with
    ``weights``, the passed share of the weight); 0.0 when no summary was found."""
    if not statuses:
        return 0.0, {"success": False, "verifier_error": "no pytest summary in the test output"}
    passed = {t for t, s in statuses.items() if s in PASSING}
    info: dict[str, Any] = {
        "tests": statuses,
        "tests_passed": len(passed),
        "tests_total": len(statuses),
        "success": len(passed) == len(statuses),
    }
    if weights:
        total = sum(weights.get(t, 0.0) for t in statuses) or 1.0
        return sum(weights.get(t, 0.0) for t in passed) / total, info
    return (1.0 if info["success"] else 0.0), info


def parse_reward(name: str, text: str) -> tuple[float, dict[str, float]]:
    """The reward of a TB2 ``reward.txt`` (one number) or ``reward.json`` (a flat
    object of named numbers: its ``reward``, else its only value, else their mean).

    Raises:
        ValueError: The file holds no such number.
    """
    if name.endswith(".txt"):
        value = float(text.strip())
        rewards = {"reward": value}
    else:
        data = json.loads(text)
        if not isinstance(data, dict) or not data:
            raise ValueError("reward.json must be an object of named numbers")
        rewards = {str(k): float(v) for k, v in data.items()}
        value = rewards.get("reward", sum(rewards.values()) / len(rewards))
    if not all(math.isfinite(v) for v in rewards.values()):
        raise ValueError(f"a reward must be a finite number, not {text.strip()[:40]!r}")
    return value, rewards
