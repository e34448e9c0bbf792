"""``gem-eval agents list``: the agents ``--agent`` can name."""

from __future__ import annotations

import typer

agents_app = typer.Typer(help="The agents that can play tasks (--agent).", no_args_is_help=True)


@agents_app.command("list")
def list_command() -> None:
    """Each agent: where it comes from, which task families it plays, what is recorded."""
    from rich.table import Table

    from gem_eval.agents import DEFAULT_AGENT, all_agents
    from gem_eval.cli.render import add_id_column, print_whole

    agents = all_agents()
    table = Table(title=f"{len(agents)} agents (default: {DEFAULT_AGENT})", title_justify="left")
    add_id_column(table, "agent", [a.name for a in agents], style="bold cyan")
    table.add_column("from")
    table.add_column("plays", no_wrap=True)
    table.add_column("recorded")
    for info in agents:
        table.add_row(
            info.name, info.source, ", ".join(info.families) or "every task", info.records
        )
    print_whole(table)
