"""``gem-eval run``: play a suite with one or more models and record every episode."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gem_eval.cli.model_options import (
    ApiKeyEnvs,
    ModelArgsEach,
    ModelBackends,
    ModelBaseUrls,
    model_choices,
    ordered_options,
)
from gem_eval.cli.options import (
    DEFAULT_REGISTRY,
    DEFAULT_RESULTS_DIR,
    AgentName,
    Categories,
    ExecutorName,
    ImageMap,
    Prices,
    RayAddress,
    Registry,
    ResultsDir,
    SampleIds,
    Seed,
    TaskGlobs,
    agent_override,
    check_executor,
    parse_prices,
    positive_seconds,
    selection_options,
)
from gem_eval.errors import UserError

if TYPE_CHECKING:
    from gem_eval.runner import RunSummary
    from gem_eval.runner.request import RunRequest


def run(
    ctx: typer.Context,
    suite: Annotated[
        str | None,
        typer.Option(
            "--suite",
            "-s",
            help="A suite name (suites/NAME.yaml) or path, or a dataset NAME@VERSION "
            "(terminal-bench@2.0) of --registry.",
        ),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help="A model; repeat to run the same samples on each. Default: the suite's `models:`.",
        ),
    ] = None,
    models_file: Annotated[
        Path | None,
        typer.Option(
            "--models",
            metavar="FILE",
            help="A YAML file listing models with their settings (`models:`, as a suite's).",
        ),
    ] = None,
    resume: Annotated[
        str | None, typer.Option(help="RUN_ID or 'latest': play only what is missing.")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Samples per task.")] = None,
    task: TaskGlobs = None,
    sample: SampleIds = None,
    category: Categories = None,
    epochs: Annotated[int | None, typer.Option(help="Attempts per sample (pass@k).")] = None,
    seed: Seed = None,
    max_turns: Annotated[int | None, typer.Option(help="Model calls per episode.")] = None,
    agent: AgentName = None,
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
    price: Prices = None,
    model_arg: ModelArgsEach = None,  # read in the order given, with the models
    model_base_url: ModelBaseUrls = None,
    model_backend: ModelBackends = None,
    api_key_env: ApiKeyEnvs = None,
    max_connections: Annotated[
        int | None,
        typer.Option(
            min=1,
            show_default="--concurrency",
            help="Calls in flight to each model at first (backs off on 429s, recovers).",
        ),
    ] = None,
    max_retries: Annotated[
        int | None, typer.Option(min=0, help="Retries of a failed model call.  [default: 6]")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            callback=positive_seconds,
            help="Longest model call, in seconds (more than 0: a call always has a limit, "
            "so that a server that hangs cannot hang the run; give a large one to wait "
            "long).  [default: 120]",
        ),
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
    registry: Registry = DEFAULT_REGISTRY,
) -> None:
    """Run a suite: every task, sample and epoch, for every model; record and score it.

    Exit codes: 0 every episode scored; 3 some were not (infrastructure, env or judge
    errors, cancelled: recorded, and --resume plays them again; or given up after
    --max-attempts); 4 --max-cost stopped the run;
    130 interrupted (resumable); 2 bad input, or a model's configuration error (a refused
    key, an unknown model, an unreachable server: the run stops at the first); 1 a
    failure of gem-eval itself (harness_error, a full disk).

    Each model's own server: --model-base-url, --api-key-env and --model-backend given
    after a --model are that model's; given before the first --model, every model's.

    --resume may change how models are reached and the run's pace (--model-base-url,
    --model-backend, --api-key-env (for one model when given after its --model),
    --timeout, --max-retries, --max-connections, --concurrency, --max-cost,
    --max-attempts, --cache, --price); changes to what is measured (seed, -M, --max-turns,
    --limit, --epochs, --sandbox, --image-map, --no-network, --task, --sample,
    --category, the suite file) need --force. A finished run has nothing to play:
    --resume says so and exits 0, and needs no model.
    """
    from gem_eval.sandbox.image_map import parse_image_map

    shared, choices = model_choices(ordered_options(ctx), warn=_warn)
    overrides = {
        **({"limits": {"max_turns": max_turns}} if max_turns is not None else {}),
        **agent_override(agent),
    }
    shared_args = shared.pop("args", None)
    request = run_request(
        suite=suite,
        models=choices,
        shared={**shared, "timeout_s": timeout, "max_retries": max_retries,
                "max_connections": max_connections},
        model_args=shared_args,
        models_file=models_file,
        options={
            "limit": limit, "epochs": epochs, "seed": seed, "overrides": overrides or None,
            "sandbox": sandbox,
            "image_map": parse_image_map(image_map) if image_map else None,
            "no_network": True if no_network else None,
            **selection_options(task, sample, category),
            "concurrency": concurrency, "max_cost_usd": max_cost,
            "max_attempts": max_attempts, "cache": True if cache else None,
        },
        resume=resume,
        force=force,
        results_dir=results_dir,
        executor=executor,
        ray_address=ray_address,
        registry=registry,
        prices=parse_prices(price),
    )  # fmt: skip
    _, summary = play_suite(
        request, quiet=quiet, dry_run=dry_run, confirm_above=confirm_above, yes=yes
    )
    raise typer.Exit(summary.exit_code)


def run_request(
    *,
    suite: str | None,
    models: list[Any],
    shared: dict[str, Any],
    model_args: dict[str, Any] | None,
    options: dict[str, Any],
    resume: str | None,
    force: bool,
    results_dir: Path,
    executor: str,
    ray_address: str | None,
    models_file: Path | None = None,
    extra: dict[str, dict[str, Any]] | None = None,
    command: str = "run",
    registry: str | None = None,
    prices: dict[str, Any] | None = None,
) -> RunRequest:
    """The request of ``run`` (or ``rollout``) from its parsed options: one-line errors
    for a bad sandbox, backend or executor before anything else."""
    from gem_eval.models.backends import BACKENDS
    from gem_eval.runner.request import RunRequest

    if options.get("sandbox") not in (None, "docker", "local", "local-unsafe"):
        raise UserError(
            f"unknown sandbox {options['sandbox']!r}: choose docker, local or local-unsafe"
        )
    check_executor(executor, ray_address)
    for settings in [shared, *(m.settings for m in models)]:
        backend = settings.get("backend")
        if backend is not None and backend not in BACKENDS:
            raise UserError(f"unknown model backend {backend!r}: choose {' or '.join(BACKENDS)}")
    from gem_eval.models.generation import ensure_generation

    for args in [model_args or {}, *(m.settings.get("args", {}) for m in models)]:
        ensure_generation(args, "-M")
    return RunRequest(
        suite=suite,
        models=tuple(models),
        shared=shared,
        model_args=model_args,
        models_file=models_file,
        options=options,
        resume=resume,
        force=force,
        results_dir=results_dir,
        executor=executor,
        ray_address=ray_address,
        extra=extra or {},
        command=command,
        registry=registry,
        prices=prices or {},
    )


def play_suite(
    request: RunRequest,
    *,
    quiet: bool = False,
    dry_run: bool = False,
    confirm_above: float | None = None,
    yes: bool = False,
) -> tuple[str, RunSummary]:
    """Plan, play and summarise a request as ``gem-eval run`` does; the run's id and
    summary. Ctrl-C exits 130; ``dry_run`` prints the estimate and exits 0;
    ``confirm_above`` asks (or refuses) before a run estimated to cost more."""
    import asyncio

    from gem_eval.cli import render
    from gem_eval.cli.progress import LiveProgress, PlainProgress
    from gem_eval.cli.streams import guard_std_streams
    from gem_eval.outcomes import OUTCOMES
    from gem_eval.runner.preflight import check_setup
    from gem_eval.runner.session import execute_run, plan_request, settle_idle

    command, results_dir = request.command, request.results_dir
    on_ray = request.executor == "ray"
    guard_std_streams()  # `| head`: a reader that leaves must not fail or stop the run
    render.route_library_log()  # the plan's notices (tasks left out) too
    if dry_run or confirm_above is not None:
        _estimate(request, dry_run, confirm_above, yes)

    plan = plan_request(
        request, preflight=lambda models, tasks, options: check_setup(models, tasks, options, _warn)
    )
    run_id = plan.manifest.run_id
    if not plan.todo:
        idle = settle_idle(plan)
        render.console.print(
            f"run {run_id}: nothing to play ({sum(plan.done.values())} episodes done, "
            f"{idle.status})",
            markup=False,
            soft_wrap=True,
        )
        if idle.given_up_before:
            render.console.print(
                f"to play the given-up episodes again: gem-eval {command} --resume {run_id} "
                "--max-attempts MORE",
                markup=False,
                soft_wrap=True,
            )
        return run_id, idle
    live = not quiet and sys.stderr.isatty()
    progress: Any = LiveProgress() if live else PlainProgress()
    if plan.manifest.extra["options"].get("sandbox") == "local-unsafe":
        render.console.print(
            "[bold yellow]warning:[/] --sandbox local-unsafe runs the agent's code with NO "
            "isolation (your files, your network)"
        )

    def ready() -> None:  # set up: the run starts (one that cannot start only says why)
        render.console.print(
            f"run [bold]{run_id}[/]: suite {plan.manifest.suite}, {len(plan.todo)} episodes "
            f"to play ({sum(plan.done.values())} done) -> {plan.run_dir.path}"
        )
        for line in _model_lines(plan.manifest.models):
            render.console.print(line, markup=False, soft_wrap=True)
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
            plan,
            sinks=[progress],
            log=log,
            on_ray=on_ray,
            ray_address=request.ray_address,
            on_ready=ready,
        )

    try:
        summary: RunSummary = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or SIGTERM before the runner
        progress.stop()
        if plan.run_dir.manifest_path.is_file():
            render.console.print(
                f"interrupted: resume with gem-eval {command} --resume {run_id}", soft_wrap=True
            )
        else:
            render.console.print("interrupted before the first episode: nothing was recorded")
        raise typer.Exit(130) from None
    progress.stop()
    render.run_summary(results_dir, run_id, summary)
    if summary.status == "interrupted":
        render.console.print(
            f"interrupted: resume with gem-eval {command} --resume {run_id}", soft_wrap=True
        )
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
            soft_wrap=True,
        )
    elif summary.exit_code == 3:
        replayed = (
            sum(n for o, n in summary.outcomes.items() if not OUTCOMES[o].scored) - summary.gave_up
        )
        if replayed > 0:
            render.console.print(
                f"to play them again: gem-eval {command} --resume {run_id}", soft_wrap=True
            )
        else:
            render.console.print(
                f"to play the given-up episodes again: gem-eval {command} --resume {run_id} "
                "--max-attempts MORE",
                markup=False,
                soft_wrap=True,
            )
    return run_id, summary


def _warn(line: str) -> None:
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
