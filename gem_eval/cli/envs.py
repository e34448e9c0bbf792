"""``gem-eval envs list`` and ``gem-eval envs show``."""

from __future__ import annotations

import inspect
from typing import Annotated

import typer

from gem_eval.errors import UserError

envs_app = typer.Typer(help="List and inspect registered envs.", no_args_is_help=True)


@envs_app.command("list")
def list_command(
    family: Annotated[
        str | None, typer.Option("--family", "-f", help="Only this family, e.g. game.")
    ] = None,
) -> None:
    """List registered env ids with their default settings."""
    from gem_eval.cli import render
    from gem_eval.registration import list_envs, spec

    ids = list_envs(family)
    if not ids:
        families = sorted({spec(i).family for i in list_envs()})
        raise UserError(f"no envs in family {family!r}; families: {', '.join(families)}")
    render.env_table([spec(i) for i in ids])


@envs_app.command("show")
def show_command(
    env_id: Annotated[str, typer.Argument(help="An env id, e.g. game:Wordle-v0-easy.")],
    seed: Annotated[int, typer.Option(help="Seed of the example first observation.")] = 0,
) -> None:
    """Show an env's settings, documentation and first observation."""
    from gem_eval.cli import render
    from gem_eval.registration import make, spec

    env_spec = spec(env_id)
    env = make(env_spec.id)
    obs, _ = env.reset(seed)
    doc = inspect.getdoc(type(env.unwrapped)) or ""
    render.env_details(env_spec, doc, obs, seed)
    env.close()
