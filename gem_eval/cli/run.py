"""``gem-eval run``: play a suite with one or more models and record every episode."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gem_eval.cli.options import (
    DEFAULT_RESULTS_DIR,
    ApiKeyEnv,
    Categories,
    ExecutorName,
    ImageMap,
    ModelArgs,
    ModelBackend,
    ModelBaseUrl,
    RayAddress,
    ResultsDir,
    SampleIds,
    TaskGlobs,
    check_executor,
    parse_key_values,
    selection_options,
)
from gem_eval.errors import UserError

if TYPE_CHECKING:
    from gem_eval.runner import RunSummary


def run(
    suite: Annotated[
        str | None, typer.Option("--suite", "-s", help="A suite name (suites/NAME.yaml) or path.")
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="A model; repeat to run the same samples on each."),
    ] = None,
    resume: Annotated[
        str | None, typer.Option(help="RUN_ID or 'latest': play only what is missing.")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Samples per task.")] = None,
    task: TaskGlobs = None,
    sample: SampleIds = None,
    category: Categories = None,
    epochs: Annotated[int | None, typer.Option(help="Attempts per sample (pass@k).")] = None,
    seed: Annotated[int | None, typer.Option(help="Base seed of the samples.")] = None,
    max_turns: Annotated[int | None, typer.Option(help="Model calls per episode.")] = None,
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="Episodes in flight.  [default: 64]")
    ] = None,
    max_attempts: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Times an episode is played in all while it ends in infra_error or "
            "env_error; --resume gives up on it after that.  [default: 3]",
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            min=0,
            metavar="USD",
            help="The run's budget in USD: once spent, no new model call starts (what "
            "can overshoot: the calls already in flight).",
        ),
    ] = None,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache",
            help="Take model replies from the response cache when it has them, and keep "
            "new ones there (`gem-eval cache stats`).",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Play nothing: print per model and task the episodes, model calls, "
            "tokens, USD and wall time to expect (from earlier runs of the suite, else "
            "bounds from the prompts and limits).",
        ),
    ] = False,
    confirm_above: Annotated[
        float | None,
        typer.Option(
            min=0,
            metavar="USD",
            help="Ask before a run estimated to cost more than this many USD (without a "
            "terminal: refuse unless --yes).",
        ),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Run even above --confirm-above.")
    ] = False,
    model_arg: ModelArgs = None,
    model_base_url: ModelBaseUrl = None,
    model_backend: ModelBackend = None,
    api_key_env: ApiKeyEnv = None,
    max_connections: Annotated[
        int | None,
        typer.Option(
            min=1,
            show_default="--concurrency",
            help="Calls in flight to each model at first (backs off on 429s, recovers).",
        ),
    ] = None,
    max_retries: Annotated[
        int | None, typer.Option(help="Retries of a failed model call.  [default: 6]")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(help="Longest model call, in seconds.  [default: 120]")
    ] = None,
    sandbox: Annotated[
        str | None,
        typer.Option(
            help="Where tools run, for every task: docker, local (bubblewrap) or "
            "local-unsafe (no isolation)."
        ),
    ] = None,
    image_map: ImageMap = None,
    no_network: Annotated[
        bool,
        typer.Option(
            "--no-network",
            help="No network in any sandbox, terminal and MCP tasks' own included (a task "
            "that declares it needs the internet is refused before the run).",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            help="With --resume: accept changes to what the run measures (seed, -M, "
            "--max-turns, --limit, --epochs, --sandbox, --image-map, --no-network, --task, "
            "--sample, --category, a changed suite file)."
        ),
    ] = False,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Plain progress lines (the default when not a TTY)."),
    ] = False,
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
) -> None:
    """Run a suite: every task, sample and epoch, for every model; record and score it.

    Exit codes: 0 every episode scored; 3 some were not (infrastructure, env or judge
    errors, cancelled: recorded, and --resume plays them again; or given up after
    --max-attempts); 4 --max-cost stopped the run;
    130 interrupted (resumable); 2 bad input, or a model's configuration error (a refused
    key, an unknown model, an unreachable server: the run stops at the first); 1 a
    failure of gem-eval itself (harness_error, a full disk).

    --resume may change how models are reached and the run's pace (--model-base-url,
    --model-backend, --api-key-env, --timeout, --max-retries, --max-connections,
    --concurrency, --max-cost, --max-attempts, --cache); changes to what is measured
    (seed, -M, --max-turns, --limit, --epochs, --sandbox, --image-map, --no-network,
    --task, --sample, --category, the suite file) need --force.
    """
    _, summary = play_suite(
        suite,
        model,
        resume=resume,
        limit=limit,
        epochs=epochs,
        seed=seed,
        max_turns=max_turns,
        concurrency=concurrency,
        max_attempts=max_attempts,
        max_cost=max_cost,
        select=selection_options(task, sample, category),
        cache=cache,
        dry_run=dry_run,
        confirm_above=confirm_above,
        yes=yes,
        model_arg=model_arg,
        model_base_url=model_base_url,
        model_backend=model_backend,
        api_key_env=api_key_env,
        max_connections=max_connections,
        max_retries=max_retries,
        timeout=timeout,
        sandbox=sandbox,
        image_map=image_map,
        no_network=no_network,
        force=force,
        results_dir=results_dir,
        quiet=quiet,
        command="run",
        executor=executor,
        ray_address=ray_address,
    )
    raise typer.Exit(summary.exit_code)


def play_suite(
    suite: str | None,
    model: list[str] | None,
    *,
    resume: str | None = None,
    limit: int | None = None,
    epochs: int | None = None,
    seed: int | None = None,
    max_turns: int | None = None,
    concurrency: int | None = None,
    max_attempts: int | None = None,
    max_cost: float | None = None,
    select: dict[str, Any] | None = None,
    cache: bool = False,
    dry_run: bool = False,
    confirm_above: float | None = None,
    yes: bool = False,
    model_arg: list[str] | None = None,
    model_base_url: str | None = None,
    model_backend: str | None = None,
    api_key_env: str | None = None,
    max_connections: int | None = None,
    max_retries: int | None = None,
    timeout: float | None = None,
    sandbox: str | None = None,
    image_map: list[str] | None = None,
    no_network: bool = False,
    force: bool = False,
    results_dir: Path = DEFAULT_RESULTS_DIR,
    quiet: bool = False,
    command: str = "run",
    executor: str = "local",
    ray_address: str | None = None,
) -> tuple[str, RunSummary]:
    """Plan, play and summarise a run as ``gem-eval run`` does (``command`` names the
    command the resume hints show); the run's id and summary. Ctrl-C exits 130;
    ``dry_run`` prints the estimate and exits 0; ``confirm_above`` asks (or refuses)
    before a run estimated to cost more."""
    import asyncio

    from gem_eval.cli import render
    from gem_eval.cli.progress import LiveProgress, PlainProgress
    from gem_eval.cli.streams import guard_std_streams
    from gem_eval.outcomes import OUTCOMES
    from gem_eval.records import ModelSpec
    from gem_eval.runner.resume import ResumeRequest
    from gem_eval.runner.session import RunOptions, execute_run, plan_run
    from gem_eval.sandbox.image_map import parse_image_map

    if sandbox not in (None, "docker", "local", "local-unsafe"):
        raise UserError(f"unknown sandbox {sandbox!r}: choose docker, local or local-unsafe")
    on_ray = check_executor(executor, ray_address)
    if model_backend not in (None, "litellm", "openai"):
        raise UserError(f"unknown model backend {model_backend!r}: choose litellm or openai")
    overrides: dict[str, Any] = {}
    if max_turns is not None:
        overrides["limits"] = {"max_turns": max_turns}
    args = parse_key_values(model_arg or [], "--model-arg")
    connection: dict[str, Any] = {
        "base_url": model_base_url,
        "backend": model_backend,
        "api_key_env": api_key_env,
        "timeout_s": timeout,
        "max_retries": max_retries,
        "max_connections": max_connections,
    }
    measured: dict[str, Any] = {
        "limit": limit,
        "epochs": epochs,
        "seed": seed,
        "overrides": overrides or None,
        "sandbox": sandbox,
        "image_map": parse_image_map(image_map) if image_map else None,
        "no_network": True if no_network else None,
        **(select or {}),
    }
    control: dict[str, Any] = {
        "concurrency": concurrency,
        "max_cost_usd": max_cost,
        "max_attempts": max_attempts,
        "cache": True if cache else None,
    }
    request = None
    if resume is not None:
        request = ResumeRequest(
            connection=connection,
            options={**measured, **control},
            model_args=args if model_arg else None,
            suite=suite,
            models=model,
            force=force,
        )
    elif force:
        raise UserError("--force goes with --resume")
    given = {k: v for k, v in connection.items() if v is not None}
    models = [ModelSpec(name=m, args=args, **given) for m in model or []]
    settings = {k: v for k, v in {**measured, **control}.items() if v is not None}
    options = RunOptions(**settings)
    guard_std_streams()  # `| head`: a reader that leaves must not fail or stop the run
    render.route_library_log()  # the plan's notices (tasks left out) too
    if dry_run or confirm_above is not None:
        _estimate(suite, models, options, results_dir, resume, request, dry_run, confirm_above, yes)
    plan = plan_run(suite, models, options, results_dir, resume=resume, request=request)
    run_id = plan.manifest.run_id
    live = not quiet and sys.stderr.isatty()
    progress: Any = LiveProgress() if live else PlainProgress()
    render.console.print(
        f"run [bold]{run_id}[/]: suite {plan.manifest.suite}, "
        f"{len(plan.todo)} episodes to play ({sum(plan.done.values())} done) -> {plan.run_dir.path}"
    )
    if plan.manifest.extra["options"].get("sandbox") == "local-unsafe":
        render.console.print(
            "[bold yellow]warning:[/] --sandbox local-unsafe runs the agent's code with NO "
            "isolation (your files, your network)"
        )
    progress.start(dict(plan.totals), dict(plan.done))
    render.prepare_run_summary()

    async def main() -> Any:
        import signal

        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)

        def log(line: str) -> None:  # as the progress lines and the library's notices
            print(f"[gem-eval] {line}", file=sys.stderr, flush=True)

        return await execute_run(
            plan, sinks=[progress], log=log, on_ray=on_ray, ray_address=ray_address
        )

    try:
        summary: RunSummary = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or SIGTERM before the runner
        progress.stop()
        render.console.print(f"interrupted: resume with gem-eval {command} --resume {run_id}")
        raise typer.Exit(130) from None
    progress.stop()
    render.run_summary(results_dir, run_id, summary)
    if summary.status == "interrupted":
        render.console.print(f"interrupted: resume with gem-eval {command} --resume {run_id}")
    elif summary.failure() is not None:
        print(f"error: {summary.failure()}", file=sys.stderr)
    elif summary.status == "budget_exhausted":
        cap = plan.manifest.max_cost_usd or 0.0
        recorded = sum(summary.outcomes.values()) - summary.outcomes["cancelled"]
        render.console.print(
            f"stopped by --max-cost: ${summary.cost_usd:.6f} spent of ${cap:g}; "
            f"{len(plan.todo) - recorded} episodes not played: gem-eval {command} --resume "
            f"{run_id} --max-cost MORE plays them",
            markup=False,
        )
    elif summary.exit_code == 3:
        replayed = (
            sum(n for o, n in summary.outcomes.items() if not OUTCOMES[o].scored) - summary.gave_up
        )
        if replayed > 0:
            render.console.print(f"to play them again: gem-eval {command} --resume {run_id}")
        else:
            render.console.print(
                f"to play the given-up episodes again: gem-eval {command} --resume {run_id} "
                "--max-attempts MORE",
                markup=False,
            )
    return run_id, summary


def _estimate(
    suite: str | None,
    models: list[Any],
    options: Any,
    results_dir: Path,
    resume: str | None,
    request: Any,
    dry_run: bool,
    confirm_above: float | None,
    yes: bool,
) -> None:
    """``--dry-run`` (print the estimate, exit 0) and ``--confirm-above`` (ask, or refuse
    without a terminal unless ``--yes``), before anything is created."""
    from gem_eval.cli.estimate_view import confirm_spend, show_estimate
    from gem_eval.estimate import estimate_run
    from gem_eval.runner.session import preview_run

    preview = preview_run(suite, models, options, results_dir, resume=resume, request=request)
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
