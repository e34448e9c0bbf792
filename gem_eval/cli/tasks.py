"""``gem-eval tasks check``: run every task's reference solution and a do-nothing agent."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from gem_eval.cli.options import (
    DEFAULT_REGISTRY,
    DEFAULT_RESULTS_DIR,
    Categories,
    ExecutorName,
    ImageMap,
    RayAddress,
    Registry,
    ResultsDir,
    SampleIds,
    TaskGlobs,
    check_executor,
    selection_options,
)

tasks_app = typer.Typer(help="Check a suite's tasks.", no_args_is_help=True)


@tasks_app.command("check")
def check(
    suite: Annotated[
        str,
        typer.Argument(help="A suite name (suites/NAME.yaml) or path, or a dataset NAME@VERSION."),
    ],
    image_map: ImageMap = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes in flight.")] = 4,
    limit: Annotated[int | None, typer.Option(help="Samples per task.")] = None,
    task: TaskGlobs = None,
    sample: SampleIds = None,
    category: Categories = None,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Plain progress lines (the default when not a TTY)."),
    ] = False,
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
    registry: Registry = DEFAULT_REGISTRY,
) -> None:
    """Play every task with its reference (--model oracle: a solution script, a game's
    oracle move, a gold answer) and with an agent that does nothing (--model noop). A
    healthy task passes the first and fails the second; a task with no reference
    (published MCPMark tasks) is checked with the do-nothing agent only. Prints a table;
    exit code 1 when any task is broken."""
    import asyncio

    from rich.table import Table

    from gem_eval.cli import render
    from gem_eval.cli.progress import LiveProgress, PlainProgress
    from gem_eval.runner.health import check_tasks
    from gem_eval.runner.session import RunOptions
    from gem_eval.sandbox.image_map import parse_image_map
    from gem_eval.suites import load_suite

    on_ray = check_executor(executor, ray_address)
    options = RunOptions(
        limit=limit,
        concurrency=concurrency,
        image_map=parse_image_map(image_map or []),
        **selection_options(task, sample, category),
    )
    live = not quiet and sys.stderr.isatty()
    progress: Any = LiveProgress() if live else PlainProgress()

    def started(plan: Any) -> None:
        without = len(plan.manifest.extra.get("no_reference", []))
        note = f" ({without} with no reference: the do-nothing agent only)" if without else ""
        render.console.print(
            f"run [bold]{plan.manifest.run_id}[/]: checking {len(plan.manifest.tasks)} tasks "
            f"of {plan.manifest.suite} with the oracle and a do-nothing agent{note}"
        )
        progress.start(dict(plan.totals), dict(plan.done))

    try:
        run_id, health = asyncio.run(
            check_tasks(
                load_suite(suite, registry=registry),
                results_dir,
                options,
                sinks=[progress],
                on_plan=started,
                on_ray=on_ray,
                ray_address=ray_address,
            )
        )
    except KeyboardInterrupt:
        progress.stop()
        raise typer.Exit(130) from None
    progress.stop()
    broken = [h for h in health if not h.healthy]
    without = sum(not h.reference for h in health)
    note = f", {without} with no reference solution: do-nothing only" if without else ""
    table = Table(
        title=f"{len(health) - len(broken)}/{len(health)} tasks healthy{note} (run {run_id})",
        title_justify="left",
    )
    for name in ("task", "oracle", "do-nothing", "status"):
        table.add_column(name, overflow="fold")
    for h in health:
        status = "ok" if h.healthy else f"[red]BROKEN[/]: {h.problem}"
        if not h.reference:
            status += " (no reference solution: do-nothing only)"
        table.add_row(
            h.task_id,
            "-" if h.oracle is None else f"{h.oracle:g}",
            "-" if h.noop is None else f"{h.noop:g}",
            status,
        )
    render.print_whole(table)
    raise typer.Exit(1 if broken else 0)
