"""The progress display shows the sandboxes' limit: on the live display's overall row, and
as a plain line each time the limit (or what sets it) changes."""

from __future__ import annotations

import io

from rich.console import Console

from gem_eval.cli.progress import LiveProgress, PlainProgress
from gem_eval.sandbox.capacity import CapacitySnapshot

GIB = 2**30


def test_the_live_display_shows_sandboxes_alive_and_the_limit() -> None:
    out = io.StringIO()
    progress = LiveProgress(Console(file=out, width=160, force_terminal=False))
    progress.sandboxes(CapacitySnapshot(live=0, limit=7, reason="memory"))  # before start
    progress.start({"a": 4}, {})
    progress.sandboxes(CapacitySnapshot(live=3, limit=7, reason="memory"))
    progress.sandboxes(CapacitySnapshot(live=2, limit=2, reason="engine errors", waiting=5))
    progress.stop()
    shown = out.getvalue()
    assert "all tasks, sandboxes 2/2 (engine errors), 5 waiting" in shown


def test_the_live_display_without_sandboxes_says_nothing_of_them() -> None:
    out = io.StringIO()
    progress = LiveProgress(Console(file=out, width=160, force_terminal=False))
    progress.start({"a": 1}, {})
    progress.stop()
    assert "all tasks" in out.getvalue() and "sandboxes" not in out.getvalue()


def test_plain_lines_say_when_the_limit_changes_not_each_start() -> None:
    out = io.StringIO()
    progress = PlainProgress(stream=out)
    for live in (1, 2, 3):
        progress.sandboxes(
            CapacitySnapshot(live=live, limit=4, reason="memory", available=5 * GIB, reserve=GIB)
        )
    progress.sandboxes(CapacitySnapshot(live=3, limit=1, reason="engine errors"))
    progress.sandboxes(CapacitySnapshot(live=1, limit=1, reason="engine errors"))
    assert out.getvalue().splitlines() == [
        "[gem-eval] sandboxes: at most 4 at once (memory: 5.0 GiB free, 1.0 GiB kept back)",
        "[gem-eval] sandboxes: at most 1 at once (engine errors)",
    ]
