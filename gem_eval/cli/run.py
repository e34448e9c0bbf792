"""``gem-eval run``: play a suite with one or more models and record every episode."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    parse_prices,
    positive_seconds,
    selection_options,
)


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
    from gem_eval.cli.run_console import play_suite, warn
    from gem_eval.runner.request import RunRequest
    from gem_eval.sandbox.image_map import parse_image_map

    shared, choices = model_choices(ordered_options(ctx), warn=warn)
    overrides = {
        **({"limits": {"max_turns": max_turns}} if max_turns is not None else {}),
        **agent_override(agent),
    }
    shared_args = shared.pop("args", None)
    request = RunRequest(
        suite=suite,
        models=tuple(choices),
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
