"""``gem-eval tasks check``: run every task's reference solution and a do-nothing agent,
and (``--agent``) check an agent program can play each task."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gem_eval.cli.options import (
    DEFAULT_REGISTRY,
    DEFAULT_RESULTS_DIR,
    AgentName,
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

if TYPE_CHECKING:
    from gem_eval.runner.health import AgentCheck, HealthReport

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
    agent: AgentName = None,
) -> None:
    """Play every task with its reference (--model oracle: a solution script, a game's
    oracle move, a gold answer) and with an agent that does nothing (--model noop). A
    healthy task passes the first and fails the second; a task with no reference
    (published MCPMark tasks) is checked with the do-nothing agent only. With --agent,
    also set up and run that agent program in every task's container against the
    do-nothing model (its turns capped), as a second run: it must start, call the model
    and score 0. Prints a table; exit code 1 when any task is broken or the agent cannot
    play it."""
    import asyncio

    from gem_eval.cli import render
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
    progress = _Progress(live=not quiet and sys.stderr.isatty())

    def started(plan: Any) -> None:
        manifest = plan.manifest
        checked = manifest.extra.get("agent_check")
        if checked:
            what = (
                f"{checked['agent']} in each task's container against the do-nothing "
                f"model ({checked['max_turns']} turns)"
            )
        else:
            without = len(manifest.extra.get("no_reference", []))
            note = f" ({without} with no reference: the do-nothing agent only)" if without else ""
            what = f"the oracle and a do-nothing agent{note}"
        render.console.print(
            f"run [bold]{manifest.run_id}[/]: checking {len(manifest.tasks)} tasks of "
            f"{manifest.suite} with {what}"
        )
        progress.start(dict(plan.totals), dict(plan.done))

    try:
        report = asyncio.run(
            check_tasks(
                load_suite(suite, registry=registry),
                results_dir,
                options,
                sinks=[progress],
                on_plan=started,
                on_ray=on_ray,
                ray_address=ray_address,
                agent=agent,
            )
        )
    except KeyboardInterrupt:
        progress.stop()
        raise typer.Exit(130) from None
    progress.stop()
    _print_report(report)
    raise typer.Exit(1 if report.broken else 0)


def _print_report(report: HealthReport) -> None:
    """The table of every task's health (and the agent's), then one line for each task
    the agent cannot play."""
    from rich.table import Table

    from gem_eval.cli import render

    health = report.tasks
    broken = [h for h in health if not h.healthy]
    without = sum(not h.reference for h in health)
    note = f", {without} with no reference solution: do-nothing only" if without else ""
    runs = f"run {report.run_id}"
    failing = [h for h in health if h.agent is not None and not h.agent.ok]
    if report.agent is not None:
        played = len(health) - len(failing)
        note += f"; {report.agent} played {played}/{len(health)}"
        runs += f", {report.agent}'s run {report.agent_run_id}"
    table = Table(
        title=f"{len(health) - len(broken)}/{len(health)} tasks healthy{note} ({runs})",
        title_justify="left",
    )
    columns = ["task", "oracle", "do-nothing", *([report.agent] if report.agent else [])]
    for name in [*columns, "status"]:
        table.add_column(name, overflow="fold")
    for h in health:
        status = "ok" if h.healthy else f"[red]BROKEN[/]: {h.problem}"
        if not h.reference:
            status += " (no reference solution: do-nothing only)"
        row = [
            h.task_id,
            "-" if h.oracle is None else f"{h.oracle:g}",
            "-" if h.noop is None else f"{h.noop:g}",
        ]
        if h.agent is not None:
            row.append(_agent_cell(h.agent))
            if not h.agent.ok:
                status += f"; [red]{report.agent} cannot play it[/]"
        table.add_row(*row, status)
    render.print_whole(table)
    for h in health:
        if h.agent is not None and h.agent.problem is not None:
            line = f"{report.agent} cannot play {h.task_id}: {h.agent.problem}"
            render.console.print(line, markup=False, highlight=False)


def _agent_cell(check: AgentCheck) -> str:
    """The agent's score, calls and times in its task's container."""
    if check.reward is None:
        return "[red]failed[/]"
    times = ", ".join(
        f"{name} {value:.1f} s"
        for name, value in (("setup", check.setup_s), ("run", check.run_s))
        if value is not None
    )
    calls = f"{check.calls} call{'s' if check.calls != 1 else ''}"
    text = f"{check.reward:g} ({calls}{', ' + times if times else ''})"
    return text if check.ok else f"[red]{text}[/]"


class _Progress:
    """The progress display of the run being played (``--agent`` plays a second run)."""

    def __init__(self, live: bool) -> None:
        self.live = live
        self.shown: Any = None

    def start(self, totals: dict[str, int], done: dict[str, int]) -> None:
        from gem_eval.cli.progress import LiveProgress, PlainProgress

        self.stop()
        self.shown = LiveProgress() if self.live else PlainProgress()
        self.shown.start(totals, done)

    def __call__(self, record: Any) -> None:
        if self.shown is not None:
            self.shown(record)

    def sandboxes(self, snapshot: Any) -> None:
        if self.shown is not None:
            self.shown.sandboxes(snapshot)

    def stop(self) -> None:
        if self.shown is not None:
            self.shown.stop()
