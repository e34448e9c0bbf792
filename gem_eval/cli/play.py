"""``gem-eval play``: watch a model, a built-in policy, or yourself play an env."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from gem_eval.cli.options import ModelBackend, ModelBaseUrl, parse_key_values
from gem_eval.errors import UserError


def _make_env(env_id: str, env_args: dict[str, Any], seed: int | None) -> Any:
    """Make the env and check that it resets: some settings are checked only then."""
    from gem_eval.errors import EnvArgumentError
    from gem_eval.registration import make

    env = make(env_id, **env_args)
    try:
        env.reset(seed)
    except (ValueError, TypeError) as exc:
        env.close()
        raise EnvArgumentError(f"{env_id}: {exc}") from exc
    return env


def play(
    env_id: Annotated[str, typer.Argument(help="An env id, e.g. game:Wordle-v0-easy.")],
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="A model (local/gemma3-270m, openai/gpt-5, hosted_vllm/NAME ...) "
            "instead of a policy.",
        ),
    ] = None,
    policy: Annotated[str, typer.Option(help="oracle, random or human.")] = "oracle",
    seed: Annotated[
        int | None,
        typer.Option(help="Episode seed (a random policy derives its own seed from it)."),
    ] = None,
    gamma: Annotated[float, typer.Option(help="Discount factor for the summary.")] = 0.99,
    arg: Annotated[
        list[str] | None, typer.Option("--arg", "-a", help="Env parameter key=value.")
    ] = None,
    model_base_url: ModelBaseUrl = None,
    model_backend: ModelBackend = None,
    max_turns: Annotated[int, typer.Option(help="Model calls allowed (harness limit).")] = 30,
    max_tokens: Annotated[
        int | None, typer.Option(help="Tokens per model reply (generation setting).")
    ] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
) -> None:
    """Play one episode and print its transcript."""
    from gem_eval.cli import render

    if not 0.0 <= gamma <= 1.0:
        raise UserError("--gamma must lie in [0, 1]")
    env = _make_env(env_id, parse_key_values(arg or [], "--arg"), seed)
    if model is None:
        _play_policy(env, policy, seed, gamma)
        return
    import asyncio

    from gem_eval.agent import Limits, run_episode
    from gem_eval.models import GenerateConfig, get_model

    chosen = get_model(model, base_url=model_base_url, backend=model_backend or "litellm")
    config = GenerateConfig(temperature=temperature, max_tokens=max_tokens)

    async def episode() -> Any:
        async with chosen:
            return await run_episode(
                env,
                chosen,
                limits=Limits(max_turns=max_turns),
                seed=seed,
                config=config,
                on_step=render.TrajectoryPrinter(),
            )

    try:
        trajectory = asyncio.run(episode())
    finally:
        env.close()
    render.trajectory_summary(trajectory, gamma)


def _play_policy(env: Any, policy: str, seed: int | None, gamma: float) -> None:
    from gem_eval.cli import render
    from gem_eval.policies import make_policy
    from gem_eval.rollout import rollout

    chosen = make_policy(policy, seed)
    try:
        trajectory = rollout(
            env, chosen, seed=seed, on_turn=render.TrajectoryPrinter(), name=policy
        )
    finally:
        env.close()
    render.trajectory_summary(trajectory, gamma)
