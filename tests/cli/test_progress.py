"""The progress display shows the sandboxes' limit: on the live display's overall row, and
as a plain line each time the limit (or what sets it) changes."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from rich.console import Console

from gem_eval.cli.progress import LiveProgress, PlainProgress
from gem_eval.records import EpisodeRecord
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
    progress = PlainProgress(every=2, stream=out)
    progress.start({"a": 4}, {})
    for live in (1, 2, 3):
        progress.sandboxes(
            CapacitySnapshot(live=live, limit=4, reason="memory", available=5 * GIB, reserve=GIB)
        )
    progress.sandboxes(CapacitySnapshot(live=3, limit=1, reason="engine errors"))
    progress.sandboxes(CapacitySnapshot(live=1, limit=1, reason="engine errors"))
    # The same limit moving (3, 2, back to 3): told once, with the next progress line.
    for limit in (3, 2, 3):
        progress.sandboxes(CapacitySnapshot(live=1, limit=limit, reason="engine errors"))
    progress(record())
    progress(record())
    lines = [line.removeprefix("[gem-eval] ") for line in out.getvalue().splitlines()]
    assert [line for line in lines if not line.startswith("2/4 done")] == [
        "4 episodes to play (0 already done)",
        "sandboxes: at most 4 at once (memory: 5.0 GiB free, 1.0 GiB kept back)",
        "sandboxes: at most 1 at once (engine errors)",
        "sandboxes: at most 3 at once (engine errors)",
    ]
    assert lines.index("sandboxes: at most 3 at once (engine errors)") == len(lines) - 1


def record() -> EpisodeRecord:
    """A finished, scored episode."""
    return EpisodeRecord(
        run_id="r",
        key="k",
        model="m",
        task_id="a",
        sample=0,
        epoch=0,
        outcome="completed",
        score=1.0,
        success=True,
        turns=1,
        started_at=0.0,
        finished_at=1.0,
    )


def test_a_run_with_sandboxes_tells_the_progress_display_their_limit(tmp_path: Path) -> None:
    from gem_eval.models import ScriptedModel
    from gem_eval.records import ModelSpec
    from gem_eval.runner.session import RunOptions, execute_run, plan_run

    suite = tmp_path / "s.yaml"
    suite.write_text(
        "name: s\ndefaults: {samples: 2, limits: {max_turns: 2}, seed: 0}\n"
        "tasks:\n  - env: game:GuessTheNumber-v0-easy\n"
        "    sandbox: {type: local, memory: 1g, max_sandboxes: 3}\n"
    )
    out = io.StringIO()
    plan = plan_run(str(suite), [ModelSpec(name="m")], RunOptions(), tmp_path / "r")
    factory = lambda spec: ScriptedModel(["\\boxed{5}"])  # noqa: E731
    asyncio.run(execute_run(plan, sinks=[PlainProgress(stream=out)], model_factory=factory))
    # The ceiling binds on any machine that holds three 1 GiB sandboxes (CI's do).
    assert "[gem-eval] sandboxes: at most 3 at once (max_sandboxes)" in out.getvalue()
    capacity = plan.run_dir.read_manifest().resources["capacity"]
    assert capacity["reason"] == "max_sandboxes" and 1 <= capacity["peak_live"] <= 3
