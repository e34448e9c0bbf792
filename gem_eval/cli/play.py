"""``gem-eval play``: watch a built-in policy (or yourself) play an env."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from gem_eval.cli import render
from gem_eval.errors import UserError


def _parse_args(pairs: list[str]) -> dict[str, Any]:
    """``["max_turns=5", "word_length=4"]`` -> ``{"max_turns": 5, "word_length": 4}``."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"--arg takes key=value, got {pair!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


def play(
    env_id: Annotated[str, typer.Argument(help="An env id, e.g. game:Wordle-v0-easy.")],
    policy: Annotated[str, typer.Option(help="oracle, random or human.")] = "oracle",
    seed: Annotated[int | None, typer.Option(help="Episode seed.")] = None,
    gamma: Annotated[float, typer.Option(help="Discount factor for the summary.")] = 0.99,
    arg: Annotated[
        list[str] | None, typer.Option("--arg", "-a", help="Env parameter key=value.")
    ] = None,
) -> None:
    """Play one episode and print its transcript."""
    from gem_eval.policies import make_policy
    from gem_eval.registration import make
    from gem_eval.rollout import rollout

    if not 0.0 <= gamma <= 1.0:
        raise UserError("--gamma must lie in [0, 1]")
    chosen = make_policy(policy, seed)
    env = make(env_id, **_parse_args(arg or []))
    printer = render.TranscriptPrinter()
    try:
        episode = rollout(env, chosen, seed=seed, on_turn=printer)
    finally:
        env.close()
    render.episode_summary(episode, gamma)
