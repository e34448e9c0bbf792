"""How a run differs from the whole suite as written, as leaderboards name it.

A run of part of a suite (``--task``, ``--sample``, ``--category``, ``--limit``) scores a
model on other samples than a run of all of it, and a run with its own ``--seed`` or
``--max-turns`` plays other samples or another task: set beside whole runs without a
word, its row would read as the model's score on the suite. The index keeps, per run, the
flags that made it so (:func:`run_variant`), and when its episodes were played
(:func:`played_at`), which for a re-scoring is when its original was.

A run of ``gem-eval tasks check`` (:func:`is_tasks_check`) scores the reference agents
(``oracle``, ``noop``) or an agent against the do-nothing model: it checks the tasks and
scores no model, so it never stands on the default leaderboard; its variant begins with
``tasks check``.
"""

from __future__ import annotations

import json
from typing import Any

from gem_eval.records import RunManifest

__all__ = ["TASKS_CHECK", "is_tasks_check", "played_at", "run_variant"]

TASKS_CHECK = "tasks_check"
"""The key of ``manifest.extra`` that marks a run of ``gem-eval tasks check``."""

_CHECK_OVERRIDES = ("agent", "agent_max_turns")
"""The overrides ``tasks check --agent`` sets (its variant says ``tasks check``)."""


def is_tasks_check(manifest: RunManifest) -> bool:
    """Whether ``gem-eval tasks check`` made the run: its mark, or (a run made before
    the mark) the keys it wrote: ``agent_check`` (the agent's run) and ``no_reference``
    (the reference agents')."""
    extra = manifest.extra
    return any(key in extra for key in (TASKS_CHECK, "agent_check", "no_reference"))


def run_variant(manifest: RunManifest) -> str | None:
    """The flags that made the run other than the whole suite as written, as a command
    line says them (``--task 'game:Wordle*' --seed 7``), after ``tasks check`` for a run
    of that; ``None`` for a run of the whole suite as written (an imported run is one).
    A re-scoring keeps its original's options, and so its variant."""
    options: dict[str, Any] = manifest.extra.get("options") or {}
    checked = is_tasks_check(manifest)
    parts = ["tasks check"] if checked else []
    if options.get("tasks") or options.get("samples") or options.get("categories"):
        # Imported here: loading the suites package (YAML, the registry) is not the
        # index's business, and this runs only when a run is indexed.
        from gem_eval.suites.selection import Selection

        chosen = Selection.parse(
            options.get("tasks"), options.get("samples"), options.get("categories")
        )
        parts.append(chosen.describe())
    if options.get("limit") is not None:
        parts.append(f"--limit {options['limit']}")
    if manifest.seed is not None:
        parts.append(f"--seed {manifest.seed}")
    overrides = {
        k: v
        for k, v in (options.get("overrides") or {}).items()
        if not (checked and k in _CHECK_OVERRIDES)
    }
    if overrides:
        parts.append(_overrides(overrides))
    return " ".join(parts) or None


def played_at(manifest: RunManifest) -> float:
    """When the run's episodes were played: its start, or for a re-scoring the time the
    re-scoring recorded (its original's start)."""
    origin = manifest.extra.get("rescored_from")
    recorded = origin.get("played_at") if isinstance(origin, dict) else None
    return float(recorded) if recorded is not None else manifest.started_at


def _overrides(overrides: dict[str, Any]) -> str:
    """``--max-turns N`` when that is all the overrides say, else them as JSON."""
    limits = overrides.get("limits")
    if set(overrides) == {"limits"} and isinstance(limits, dict) and set(limits) == {"max_turns"}:
        return f"--max-turns {limits['max_turns']}"
    return "overrides " + json.dumps(overrides, sort_keys=True, separators=(",", ":"))
