"""``gem-eval leaderboard``, ``gem-eval compare`` and ``gem-eval gate``.

Thin commands: read episode frames from the results index, call :mod:`gem_eval.metrics`,
render. pandas is imported only when a command runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from gem_eval.cli.options import DEFAULT_RESULTS_DIR, ResultsDir, check_results_dir, open_index
from gem_eval.errors import GemEvalError, UserError, did_you_mean


class By(str, Enum):
    """What one leaderboard row is."""

    model = "model"
    task = "task"
    category = "category"


class Format(str, Enum):
    """Where the leaderboard goes: the terminal, or text in a file format."""

    table = "table"
    md = "md"
    csv = "csv"
    json = "json"
    html = "html"


GROUPS: dict[By, tuple[str, ...]] = {
    By.model: ("model",),
    By.task: ("model", "task_id"),
    By.category: ("model", "category"),
}


def leaderboard(
    runs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Run ids (or 'latest'), each its own rows; default: each agent + model's "
            "latest finished run of the whole of each suite, graded by the tasks' own scorers."
        ),
    ] = None,
    all_runs: Annotated[
        bool, typer.Option("--all-runs", help="Every run, each its own rows.")
    ] = False,
    scorer: Annotated[
        str | None,
        typer.Option(
            "--scorer",
            help="Only scores by this scorer (success, return, judge ...); without RUN or "
            "--all-runs, each model's latest run holding them (a `rescore --scorer`).",
        ),
    ] = None,
    suite: Annotated[str | None, typer.Option("--suite", help="Only runs of this suite.")] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Only what this agent played (gem-eval, terminus-2 ...)."),
    ] = None,
    by: Annotated[By, typer.Option("--by", help="One row per model, task or category.")] = (
        By.model
    ),
    format: Annotated[
        Format, typer.Option("--format", "-f", help="table (terminal), md, csv, json or html.")
    ] = Format.table,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this file (format from its suffix)."),
    ] = None,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
) -> None:
    """Score, CI, pass@k, cost and error counts per model (or task, or category).

    A row is one run's agent + model pair, graded by one scorer: runs, agents and scorers
    are never pooled.
    """
    from gem_eval.metrics import summarize
    from gem_eval.metrics.render import FILE_FORMATS, summary_table, to_text, write_table
    from gem_eval.metrics.selection import agents_of, select_runs

    if output is not None and format is Format.table:
        suffix = output.suffix.lstrip(".").lower()
        if suffix not in FILE_FORMATS:
            raise UserError(f"--output {output}: pass --format ({', '.join(FILE_FORMATS)})")
        format = Format(suffix)
    if runs and all_runs:
        raise UserError("give RUN ids or --all-runs, not both")
    with open_index(results_dir) as index:
        known = index.runs()
        agents = {a for run in known for a in agents_of(run)}
        if agent is not None and known and agent not in agents:
            close = did_you_mean(agent, agents) or f" Agents: {', '.join(sorted(agents))}."
            raise UserError(f"--agent {agent}: no run was played by it.{close}")
        from gem_eval.store import resolve_run

        named = [resolve_run(known, r) for r in runs] if runs else None
        chosen = select_runs(
            known, named=named, all_runs=all_runs, suite=suite, scorer=scorer, agent=agent
        )
        frame = chosen.keep(index.episodes_frame(run_ids=chosen.run_ids))
    if frame.empty:
        where = f" of suite {suite!r}" if suite else ""
        scored = f" scored by {scorer!r}" if scorer else ""
        played = f" played by {agent!r}" if agent else ""
        hint = chosen.hint()  # tasks check runs, say, which the default board leaves out
        more = f" ({hint})" if hint else ""
        raise UserError(f"no episodes{where}{scored}{played} in {results_dir}{more}")
    board = chosen.mark(summarize(frame, by=GROUPS[by]))
    if format is Format.table:
        from gem_eval.cli.render import console, print_whole

        print_whole(summary_table(board, title=chosen.title(by.value)))
        hint = chosen.hint()
        for line in [*chosen.warnings(), *([hint] if hint else [])]:
            console.print(line, markup=False, soft_wrap=True)
        return
    if output is None:
        typer.echo(to_text(board, format.value), nl=False)
    else:
        typer.echo(f"wrote {write_table(board, format.value, output)}")
    for line in chosen.warnings():  # stdout holds the board alone
        typer.echo(f"note: {line}", err=True)


def compare(
    base_run: Annotated[str, typer.Argument(help="The base run id (or 'latest').")],
    new_run: Annotated[str, typer.Argument(help="The new run id (or 'latest').")],
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
) -> None:
    """Paired per-sample comparison of two runs on the samples both scored."""
    from gem_eval.cli.render import console, print_whole
    from gem_eval.gating import two_runs
    from gem_eval.metrics.compare import compare_runs, scorer_mismatch
    from gem_eval.metrics.render import comparison_lines, comparison_table

    check_results_dir(results_dir)
    base, new, base_frame, new_frame = two_runs(results_dir, base_run, new_run)
    mismatch = scorer_mismatch(base_frame, new_frame)
    if mismatch is not None:
        raise UserError(f"{base['run_id']} and {new['run_id']} do not compare: {mismatch}")
    result = compare_runs(base_frame, new_frame)
    console.print(f"base [bold]{base['run_id']}[/] vs new [bold]{new['run_id']}[/]", soft_wrap=True)
    agents = result.agents_line()
    if agents is not None:
        console.print(agents, markup=False, soft_wrap=True)
    if base.get("suite_hash") != new.get("suite_hash"):
        console.print("[yellow]warning:[/] the runs' suite hashes differ")
    if result.n_pairs == 0:
        raise UserError(f"no episode was scored in both {base['run_id']} and {new['run_id']}")
    print_whole(comparison_table(result))
    for line in comparison_lines(result):
        console.print(line, markup=False)


def gate(
    new_run: Annotated[str, typer.Argument(help="The run to check (or 'latest').")],
    baseline: Annotated[str, typer.Option("--baseline", "-b", help="The baseline run id.")],
    max_drop: Annotated[
        float, typer.Option(help="Largest tolerated drop in mean score (absolute).")
    ] = 0.02,
    alpha: Annotated[float, typer.Option(help="One-sided significance level.")] = 0.05,
    max_infra_error_rate: Annotated[
        float, typer.Option(help="Share of unscored episodes above which runs are incomparable.")
    ] = 0.1,
    allow_subset: Annotated[
        bool,
        typer.Option(
            "--allow-subset",
            help="Judge the part both runs played when the new run lacks models, tasks or "
            "samples of the baseline (named in the output); without it, such runs are "
            "incomparable (exit 3).",
        ),
    ] = False,
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit",
            metavar="FILE",
            help="Also write the verdict as JUnit XML: a testcase for the run's verdict and "
            "one per task, failed where the task dropped significantly.",
        ),
    ] = None,
    summary: Annotated[
        Path | None,
        typer.Option(
            "--summary",
            metavar="FILE",
            help="Also append a Markdown summary to FILE (GitHub's $GITHUB_STEP_SUMMARY).",
        ),
    ] = None,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
) -> None:
    """Fail on a significant score drop from a baseline run.

    Exit codes:

    \b
    0  no significant drop beyond --max-drop
    1  a significant drop: the one-sided (1-alpha) upper bound of new - base is
       below -max_drop (and McNemar's test on samples agrees when every sample's
       score is 0 or 1)
    2  bad input: an unknown run, the baseline itself, a bad option
    3  the runs are not comparable: a run not finished, different suite hashes
       or scorers, a new run lacking models, tasks or samples of the baseline
       (unless --allow-subset), no sample scored in both, or too many unscored
       episodes
    4  the gate itself failed (a bug, an unreadable results index, a --junit
       or --summary file that could not be written)

    --junit and --summary are written for exit 0, 1 and 3; a task's testcase fails
    when the gate's rule, applied to that task's pairs alone, finds a significant drop.
    """
    from gem_eval.gating import GateRequest, judge
    from gem_eval.metrics.compare import EXIT_CRASH

    request = GateRequest(
        new_run, baseline, results_dir, max_drop, alpha, max_infra_error_rate, allow_subset,
        junit, summary,
    )  # fmt: skip
    request.check(lambda name: "--" + name.replace("_", "-"))
    check_results_dir(results_dir)
    with _exit_on_crash(EXIT_CRASH):
        result = judge(request)
    for line in result.lines:
        typer.echo(line)
    raise typer.Exit(result.exit_code)


@contextmanager
def _exit_on_crash(code: int) -> Iterator[None]:
    """Exit with ``code`` when the body fails unexpectedly.

    The CLI's generic failure code is 1, which the gate gives a regression: a crash must
    not read as a verdict. User errors (exit 2) and the body's own exits pass through.
    """
    from gem_eval.cli import click_exceptions

    try:
        yield
    except (UserError, typer.Exit, click_exceptions().ClickException):
        raise
    except Exception as exc:
        if isinstance(exc, GemEvalError) and not os.environ.get("GEM_EVAL_DEBUG"):
            typer.echo(f"error: {exc}", err=True)
        else:  # a bug in gem-eval: its traceback is what a report needs
            import traceback

            typer.echo(traceback.format_exc(), err=True, nl=False)
            typer.echo(f"error: the gate failed: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(code) from exc
