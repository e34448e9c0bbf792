"""The root Typer app and its sub-commands."""

from __future__ import annotations

from typing import Annotated

import typer

from gem_eval._version import __version__
from gem_eval.cli.agents import agents_app
from gem_eval.cli.cache import cache_app
from gem_eval.cli.envs import envs_app
from gem_eval.cli.model_options import OrderedCommand
from gem_eval.cli.play import play
from gem_eval.cli.report import compare, gate, leaderboard
from gem_eval.cli.report_html import report, view
from gem_eval.cli.rescore import rescore
from gem_eval.cli.results import results_app
from gem_eval.cli.rollout import rollout
from gem_eval.cli.run import run
from gem_eval.cli.sandbox import sandbox_app
from gem_eval.cli.suites import suites_app
from gem_eval.cli.tasks import tasks_app

app = typer.Typer(
    name="gem-eval",
    help="A Gym for agentic LLMs, and the harness that evaluates them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    # Plain help: typer's rich help formatter imports rich's markdown stack (~0.3 s on
    # typer 0.29 / rich 15), which would triple the start-up of every command.
    rich_markup_mode=None,
)
app.command(cls=OrderedCommand)(run)
app.command()(rollout)
app.command()(leaderboard)
app.command()(compare)
app.command()(gate)
app.command()(report)
app.command()(view)
app.command()(play)
app.command()(rescore)
app.add_typer(envs_app, name="envs")
app.add_typer(suites_app, name="suites")
app.add_typer(results_app, name="results")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(tasks_app, name="tasks")
app.add_typer(cache_app, name="cache")
app.add_typer(agents_app, name="agents")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"gem-eval {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """A Gym for agentic LLMs, and the harness that evaluates them."""
