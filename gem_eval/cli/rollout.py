"""``gem-eval rollout``: collect RL experience and write it as a batch for a trainer.

The episodes are played exactly as ``gem-eval run`` plays them (same agent loop,
executor, concurrency, records and ``--resume``); then their transitions, returns and
advantages are written by :mod:`gem_eval.rl.batch`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from gem_eval.cli.options import (
    DEFAULT_RESULTS_DIR,
    AgentName,
    ApiKeyEnv,
    Categories,
    ExecutorName,
    ModelArgs,
    ModelBackend,
    ModelBaseUrl,
    RayAddress,
    ResultsDir,
    SampleIds,
    Seed,
    TaskGlobs,
    agent_override,
    parse_key_values,
    selection_options,
)
from gem_eval.errors import UserError


def rollout(
    target: Annotated[
        str | None,
        typer.Argument(
            help="An env id (game:GuessTheNumber-v0-easy) or a suite (name or path). "
            "Not with --resume."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="The policy's model.")] = None,
    out: Annotated[Path, typer.Option(help="Where the batch goes (a directory).")] = Path(
        "rollouts"
    ),
    episodes: Annotated[
        int | None, typer.Option(min=1, help="Episodes of an env id (its samples).")
    ] = None,
    samples: Annotated[
        int | None, typer.Option(min=1, help="Samples (seeds) per task; GRPO's groups.")
    ] = None,
    epochs: Annotated[
        int | None, typer.Option(min=1, help="Episodes per sample (GRPO's group size).")
    ] = None,
    task: TaskGlobs = None,
    sample: SampleIds = None,
    category: Categories = None,
    gamma: Annotated[
        float | None,
        typer.Option(
            min=0.0, max=1.0, show_default="1.0", help="Discount factor (kept with the run)."
        ),
    ] = None,
    estimator: Annotated[
        str | None,
        typer.Option(
            show_default="rebn",
            help="Advantages: rebn, grpo, reinforce or reinforce_baseline (kept with the run).",
        ),
    ] = None,
    file_format: Annotated[
        list[str] | None,
        typer.Option("--format", help="parquet and/or jsonl (repeatable).  [default: both]"),
    ] = None,
    tokens: Annotated[
        bool | None,
        typer.Option(
            "--tokens/--no-tokens",
            help="Ask the server for token ids and logprobs.  [default: with --model-base-url]",
        ),
    ] = None,
    seed: Seed = None,
    max_turns: Annotated[int | None, typer.Option(help="Model calls per episode.")] = None,
    agent: AgentName = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Episodes in flight.")] = None,
    model_arg: ModelArgs = None,
    model_base_url: ModelBaseUrl = None,
    model_backend: ModelBackend = None,
    api_key_env: ApiKeyEnv = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="RUN_ID or 'latest': play what is missing, then write the batch with the "
            "run's own --gamma and --estimator."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            help="With --resume: accept another --gamma or --estimator, or other changes to "
            "what the run measures."
        ),
    ] = False,
    results_dir: ResultsDir = DEFAULT_RESULTS_DIR,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Plain progress lines.")] = False,
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
) -> None:
    """Play episodes as `run` does and write their transitions with returns-to-go and
    advantages (Parquet and JSONL, schema in batch.json) for a trainer.

    The run keeps --gamma and --estimator: --resume writes its batch with them (another
    value needs --force). Exit codes as `run`'s; the batch is written whenever some
    episode was scored.
    """
    from gem_eval.cli import render
    from gem_eval.cli.run_console import play_suite
    from gem_eval.rl.batch import check_formats
    from gem_eval.rl.estimators import ESTIMATORS
    from gem_eval.rl.rollout import ROLLOUT_KEY, SUITE_FILE, export_rollout, rollout_suite
    from gem_eval.runner.request import ModelChoice, RunRequest

    formats = file_format or ["parquet", "jsonl"]
    check_formats(formats)
    if estimator is not None and estimator not in ESTIMATORS:
        raise UserError(f"unknown estimator {estimator!r}: choose one of {', '.join(ESTIMATORS)}")
    args = list(model_arg or [])
    if tokens if tokens is not None else model_base_url is not None:
        args.append("return_tokens=true")
    suite, limit = None, samples
    given = {"gamma": gamma, "estimator": estimator}
    written_suite: list[Path] = []  # the one-task suite written for an env id, and --out
    if resume is None:
        if target is None or model is None:
            raise UserError("name an env id or a suite, and --model (or --resume a rollout)")
        gamma = 1.0 if gamma is None else gamma
        given = {"gamma": gamma, "estimator": estimator or "rebn"}
        suite, limit = rollout_suite(target, out, episodes, samples, gamma, written_suite)
    elif target is not None:
        raise UserError("--resume replays the rollout's own suite: drop the env id or suite")
    overrides = {
        **({"limits": {"max_turns": max_turns}} if max_turns is not None else {}),
        **agent_override(agent),
    }
    try:
        request = RunRequest(
            suite=suite,
            models=(ModelChoice(model),) if model else (),
            shared={
                "base_url": model_base_url, "backend": model_backend, "api_key_env": api_key_env,
            },
            model_args=parse_key_values(args, "-M") if (model_arg or resume is None) else None,
            options={
                "limit": limit, "epochs": epochs, "seed": seed, "overrides": overrides or None,
                "concurrency": concurrency, **selection_options(task, sample, category),
            },
            resume=resume,
            force=force,
            results_dir=results_dir,
            executor=executor,
            ray_address=ray_address,
            extra={ROLLOUT_KEY: given},
            command="rollout",
        )  # fmt: skip
        run_id, summary = play_suite(request, quiet=quiet)
    except UserError as exc:  # refused before the run: the suite written for it goes too
        if not written_suite:
            raise
        for path in written_suite:
            path.unlink() if path.is_file() else path.rmdir()
        # Its file and line are gem-eval's own (the suite written for the env id).
        raise UserError(re.sub(rf"^\S*{re.escape(SUITE_FILE)}:\d+: ", "", str(exc))) from None
    if summary.status == "interrupted" or summary.failure() is not None:
        raise typer.Exit(summary.exit_code)
    exported = export_rollout(results_dir, run_id, given, out, formats)
    about, gamma, estimator = exported.about, exported.gamma, exported.estimator
    written = exported.files
    skipped = ", ".join(f"{n} {k}" for k, n in sorted(about["skipped"].items()))
    render.console.print(
        f"batch: {about['transitions']} transitions of {about['episodes']} episodes "
        f"({estimator}, γ={gamma}"
        + (f"; {about['with_tokens']} with token ids" if about["with_tokens"] else "")
        + (f"; left out: {skipped}" if skipped else "")
        + f") -> {', '.join(str(p) for p in written)}"
    )
    if summary.exit_code:
        print(f"[gem-eval] exit {summary.exit_code}: see the run's summary above", file=sys.stderr)
    raise typer.Exit(summary.exit_code)
