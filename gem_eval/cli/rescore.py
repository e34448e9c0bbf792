"""``gem-eval rescore RUN``: grade a recorded run's episodes again, into a new run."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from gem_eval.cli.options import DEFAULT_RESULTS_DIR, ResultsDir, check_results_dir
from gem_eval.errors import UserError

if TYPE_CHECKING:
    from gem_eval.records import Scorer
    from gem_eval.runner.rescore import RescoreSummary


SCORERS = ("success", "return", "discounted_return", "judge")
"""The scorers ``--scorer`` offers: :data:`gem_eval.records.Scorer`'s values (spelled out
here so that ``--help`` does not import the records)."""


def rescore(
    run_id: Annotated[str, typer.Argument(help="The run to re-score: a run id, or 'latest'.")],
    scorer: Annotated[
        str | None,
        typer.Option(
            metavar="[" + "|".join(SCORERS) + "]",
            help="Score every task with this scorer (default: each task's own).",
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            help="The judge model of the tasks scored by a judge (--scorer judge), "
            "instead of their own `judge:`; it is called, the judged models are not."
        ),
    ] = None,
    judge_base_url: Annotated[
        str | None, typer.Option(help="The judge's OpenAI-compatible server.")
    ] = None,
    judge_backend: Annotated[
        str, typer.Option(help="The judge's backend: litellm, or openai.")
    ] = "litellm",
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes replayed at once.")] = 8,
) -> None:
    """Grade a run's recorded episodes again (a new grader, another scorer) into a new
    run, without calling the model: each episode's recorded replies are replayed through
    a fresh env (a judge, for tasks scored by one, is called). Hosted tasks (terminal,
    MCP) keep their score: they are graded on the final container state, which is not
    kept."""
    import asyncio

    from gem_eval.cli import render
    from gem_eval.judge import JudgeSpec
    from gem_eval.runner.rescore import rescore_run

    if scorer is not None and scorer not in SCORERS:
        # One line, as every user error (Click's choice error is a three-line block).
        choices = ", ".join(SCORERS[:-1]) + f" or {SCORERS[-1]}"
        raise UserError(f"unknown scorer {scorer!r}: choose {choices}")
    check_results_dir(results_dir)
    if judge is None and (judge_base_url is not None or judge_backend != "litellm"):
        raise UserError("--judge-base-url and --judge-backend go with --judge MODEL")
    spec = None
    if judge is not None:
        spec = JudgeSpec(model=judge, base_url=judge_base_url, backend=judge_backend)
    progress = _Progress()
    render.route_library_log()
    try:
        summary = asyncio.run(
            rescore_run(
                results_dir,
                run_id,
                scorer=cast("Scorer | None", scorer),  # checked against SCORERS above
                judge=spec,
                concurrency=concurrency,
                progress=progress,
            )
        )
    except (KeyboardInterrupt, asyncio.CancelledError):
        progress.stop()
        render.console.print(
            "interrupted: in the new run, the episodes not re-scored yet keep their recorded score"
        )
        raise typer.Exit(130) from None
    progress.stop()
    _print_summary(summary)


class _Progress:
    """A bar on a terminal; in a log, a line every 25 episodes and at the end."""

    def __init__(self) -> None:
        from gem_eval.cli.render import console

        self.bar: Any = None
        self.row: Any = None
        self.live = console.is_terminal

    def __call__(self, done: int, total: int) -> None:
        if not self.live:
            if done % 25 == 0 or done == total:
                print(f"[gem-eval] {done}/{total} episodes re-scored", file=sys.stderr)
            return
        if self.bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            from gem_eval.cli.render import console

            self.bar = Progress(
                TextColumn("re-scoring"), BarColumn(), MofNCompleteColumn(), console=console
            )
            self.row = self.bar.add_task("re-scoring", total=total)
            self.bar.start()
        self.bar.update(self.row, completed=done)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _print_summary(s: RescoreSummary) -> None:
    from rich.table import Table

    from gem_eval.cli.render import console, print_whole
    from gem_eval.runner.rescore import hosted_line

    how = f"scorer {s.scorer}" if s.scorer else "each task's scorer"
    if s.judge:
        how += f", judge {s.judge}"
    lines = [
        f"re-scored {s.source_run_id} into {s.run_id} ({how}; the recorded models were not called)",
        f"{s.regraded} episodes graded again, {s.changed} scores changed",
    ]
    for count, what, first in (
        (len(s.diverged), "replays left the record and keep their score", s.diverged),
        (len(s.failed), "replays could not be played and keep their score", s.failed),
    ):
        if count:
            key, why = next(iter(first.items()))
            lines.append(f"{count} {what} (first: {key}: {why})")
    hosted = hosted_line(s)
    if hosted is not None:
        lines.append(hosted)
    if s.not_scored:
        lines.append(
            f"{s.not_scored} episodes were not scored in {s.source_run_id} and are copied as "
            f"they are (still to play: gem-eval run --resume {s.run_id})"
        )
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)  # whole lines in logs too
    table = Table(title="mean score", title_justify="left")
    table.add_column("model", overflow="fold")
    for name in ("recorded", "re-scored"):
        table.add_column(name, justify="right")
    for model, old in s.old_means.items():
        new = s.new_means.get(model)
        table.add_row(model, _mean(old), _mean(new))
    print_whole(table)


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
