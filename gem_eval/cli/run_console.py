"""A run as the terminal shows it: what ``gem-eval run`` and ``gem-eval rollout`` print
around :func:`gem_eval.runner.session.play_request`, which plays the request.

The estimate (``--dry-run``, ``--confirm-above``), the run's first lines, the progress
display, the summary, and the line that says how to go on (resume, more attempts, a
larger budget); Ctrl-C exits 130.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from gem_eval.runner import RunSummary
    from gem_eval.runner.plan import PlannedRun
    from gem_eval.runner.request import RunRequest


def play_suite(
    request: RunRequest,
    *,
    quiet: bool = False,
    dry_run: bool = False,
    confirm_above: float | None = None,
    yes: bool = False,
) -> tuple[str, RunSummary]:
    """Play a request as ``gem-eval run`` does and print it; the run's id and summary.
    Ctrl-C exits 130; ``dry_run`` prints the estimate and exits 0; ``confirm_above``
    asks (or refuses) before a run estimated to cost more."""
    import asyncio

    from gem_eval.cli import render
    from gem_eval.cli.progress import LiveProgress, PlainProgress
    from gem_eval.cli.streams import guard_std_streams
    from gem_eval.runner.session import play_request

    guard_std_streams()  # `| head`: a reader that leaves must not fail or stop the run
    render.route_library_log()  # the plan's notices (tasks left out) too
    if dry_run or confirm_above is not None:
        _estimate(request, dry_run, confirm_above, yes)
    live = not quiet and sys.stderr.isatty()
    progress: Any = LiveProgress() if live else PlainProgress()
    planned: list[PlannedRun] = []

    def on_plan(plan: PlannedRun) -> None:
        planned.append(plan)
        if plan.todo and plan.manifest.extra["options"].get("sandbox") == "local-unsafe":
            render.console.print(
                "[bold yellow]warning:[/] --sandbox local-unsafe runs the agent's code with NO "
                "isolation (your files, your network)"
            )

    def ready() -> None:  # set up: the run starts (one that cannot start only says why)
        plan = planned[0]
        render.console.print(
            f"run [bold]{plan.manifest.run_id}[/]: suite {plan.manifest.suite}, "
            f"{len(plan.todo)} episodes to play ({sum(plan.done.values())} done) -> "
            f"{plan.run_dir.path}"
        )
        for line in _model_lines(plan.manifest.models):
            render.console.print(line, markup=False, soft_wrap=True)
        progress.start(dict(plan.totals), dict(plan.done))
        render.prepare_run_summary()

    async def main() -> tuple[PlannedRun, RunSummary]:
        import signal

        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)

        def log(line: str) -> None:  # as the progress lines and the library's notices
            print(f"[gem-eval] {line}", file=sys.stderr, flush=True)

        return await play_request(
            request, warn=warn, sinks=[progress], log=log, on_plan=on_plan, on_ready=ready
        )

    try:
        plan, summary = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or SIGTERM before the runner
        progress.stop()
        if planned and planned[0].run_dir.manifest_path.is_file():
            resume = f"gem-eval {request.command} --resume {planned[0].manifest.run_id}"
            render.console.print(f"interrupted: resume with {resume}", soft_wrap=True)
        else:
            render.console.print("interrupted before the first episode: nothing was recorded")
        raise typer.Exit(130) from None
    progress.stop()
    if plan.todo:
        render.run_summary(request.results_dir, plan.manifest.run_id, summary)
        if summary.status != "interrupted" and summary.failure() is not None:
            print(f"error: {summary.failure()}", file=sys.stderr)
    for line in _next_steps(request.command, plan, summary):
        render.console.print(line, markup=False, soft_wrap=True)
    return plan.manifest.run_id, summary


def _next_steps(command: str, plan: PlannedRun, summary: RunSummary) -> list[str]:
    """What the run's end says: nothing to play, or how to go on from where it stopped
    (the failure itself goes to stderr)."""
    from gem_eval.outcomes import OUTCOMES

    run_id = plan.manifest.run_id
    again = f"to play them again: gem-eval {command} --resume {run_id}"
    more = f"to play the given-up episodes again: gem-eval {command} --resume {run_id} "
    more += "--max-attempts MORE"
    if not plan.todo:
        done = sum(plan.done.values())
        idle = f"run {run_id}: nothing to play ({done} episodes done, {summary.status})"
        return [idle, *([more] if summary.given_up_before else [])]
    if summary.status == "interrupted":
        return [f"interrupted: resume with gem-eval {command} --resume {run_id}"]
    if summary.failure() is not None:  # said on stderr
        return []
    if summary.status == "budget_exhausted":
        cap = plan.manifest.max_cost_usd or 0.0
        recorded = sum(summary.outcomes.values()) - summary.outcomes["cancelled"]
        share = f" ({summary.cost_usd / cap:.0%})" if cap > 0 else ""
        why = f" ({summary.held_back})" if summary.held_back else ""
        return [
            f"stopped by --max-cost: ${summary.cost_usd:.6f} spent of ${cap:g}{share}; "
            f"{len(plan.todo) - recorded} episodes not played{why}: gem-eval {command} "
            f"--resume {run_id} --max-cost MORE plays them"
        ]
    if summary.exit_code == 3:
        unscored = sum(n for o, n in summary.outcomes.items() if not OUTCOMES[o].scored)
        return [again if unscored - summary.gave_up > 0 else more]
    return []


def warn(line: str) -> None:
    """A warning line on the console (``warning:`` in bold yellow)."""
    from rich.markup import escape

    from gem_eval.cli.render import console

    console.print(f"[bold yellow]warning:[/] {escape(line)}", soft_wrap=True)


def _model_lines(models: list[Any]) -> list[str]:
    """One line per model reached at its own server, when the models' servers differ (so
    that two checkpoints on two servers are seen to go each to its own)."""
    from gem_eval.models.reference import REFERENCE_MODELS

    models = [m for m in models if m.name not in REFERENCE_MODELS]  # they call nothing
    places = {(m.base_url, m.backend, m.api_key_env) for m in models}
    if len(models) < 2 or len(places) < 2:
        return []
    return [
        f"  model {m.name}: {m.base_url or 'the provider'} ({m.backend}"
        + (f", key from {m.api_key_env}" if m.api_key_env else "")
        + ")"
        for m in models
    ]


def _estimate(request: RunRequest, dry_run: bool, confirm_above: float | None, yes: bool) -> None:
    """``--dry-run`` (print the estimate, exit 0) and ``--confirm-above`` (ask, or refuse
    without a terminal unless ``--yes``), before anything is created."""
    from gem_eval.cli.estimate_view import confirm_spend, show_estimate
    from gem_eval.estimate import estimate_run
    from gem_eval.runner.session import preview_request

    results_dir = request.results_dir
    preview = preview_request(request)
    estimate = estimate_run(
        preview.episodes,
        results_dir=results_dir if results_dir.is_dir() else None,
        concurrency=preview.concurrency,
        suite=preview.suite,
        suite_hash=preview.suite_hash,
    )
    if dry_run:
        show_estimate(estimate)
        raise typer.Exit(0)
    if confirm_above is not None:
        confirm_spend(estimate, confirm_above, yes=yes)
