"""``gem-eval sandbox build-base``, ``sandbox cleanup`` and ``sandbox list``."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table

sandbox_app = typer.Typer(
    help="Build the sandbox base image; find and remove leftover containers.",
    no_args_is_help=True,
)


@sandbox_app.command("build-base")
def build_base(
    tag: Annotated[str | None, typer.Option(help="Image tag (default: the base image).")] = None,
    mirror: Annotated[
        str | None, typer.Option(help="Debian mirror (default: the one apt uses here).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if the image exists.")] = False,
) -> None:
    """Build the base image (Debian bookworm + Python 3, user `agent`) with debootstrap,
    or load it from the cache; no image registry is needed."""
    from gem_eval.cli.render import console
    from gem_eval.sandbox.images import BASE_IMAGE, ensure_base

    started = time.monotonic()
    how = ensure_base(tag or BASE_IMAGE, mirror=mirror, force=force, log=console.print)
    console.print(f"{tag or BASE_IMAGE}: {how} ({time.monotonic() - started:.1f} s)")


@sandbox_app.command("list")
def list_command(
    run: Annotated[str | None, typer.Option("--run", help="Only this run's containers.")] = None,
) -> None:
    """List gem-eval's containers, live and left over."""
    from gem_eval.cli.render import console
    from gem_eval.sandbox import cleanup

    containers = cleanup.find(run, include_live=True)
    leftovers = {c.id for c in cleanup.find(run)}
    table = Table(title=f"{len(containers)} gem-eval containers", title_justify="left")
    for name in ("container", "run", "owner pid", "status", "leftover"):
        table.add_column(name)
    for c in containers:
        table.add_row(
            c.short_id,
            c.labels.get(cleanup.RUN, "-"),
            c.labels.get(cleanup.PID, "-"),
            c.status,
            "yes" if c.id in leftovers else "",
        )
    console.print(table)


@sandbox_app.command("cleanup")
def cleanup_command(
    run: Annotated[str | None, typer.Option("--run", help="Only this run's containers.")] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Also containers of runs still going.")
    ] = False,
) -> None:
    """Remove containers (and their networks) left by runs whose process is gone (killed
    with SIGKILL, a crashed machine)."""
    from gem_eval.cli.render import console
    from gem_eval.sandbox import cleanup

    removed = cleanup.remove_leftovers(run, include_live=all_)
    networks = cleanup.remove_leftover_networks(run, include_live=all_)
    console.print(
        f"removed {len(removed)} container(s)"
        + (f" and {len(networks)} network(s)" * bool(networks))
        + (f": {' '.join(removed + networks)}" * bool(removed or networks))
    )
