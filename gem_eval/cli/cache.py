"""``gem-eval cache stats`` and ``cache clear``: the model-response cache."""

from __future__ import annotations

import re
import time
from typing import Annotated

import typer

from gem_eval.errors import UserError

cache_app = typer.Typer(
    help="Inspect and clear the model-response cache (filled by `run --cache`).",
    no_args_is_help=True,
)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_age(text: str) -> float:
    """Seconds in an age such as ``30m``, ``12h``, ``7d`` or ``2w``.

    Raises:
        UserError: Not a number followed by one of s, m, h, d, w.
    """
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise UserError(f"--older-than {text!r}: write a number and a unit, e.g. 30m, 12h, 7d")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    scaled = float(size)
    for unit in ("KB", "MB", "GB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GB":
            break
    return f"{scaled:.1f} {unit}"


def _when(timestamp: float | None) -> str:
    return "-" if timestamp is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


@cache_app.command("stats")
def stats_command() -> None:
    """Entries, size on disk, entries per model, oldest and newest."""
    from rich.table import Table

    from gem_eval.cli.render import console
    from gem_eval.models.response_cache import ResponseCache

    cache = ResponseCache()
    try:
        stats = cache.stats()
    finally:
        cache.close()
    console.print(f"{stats.path}", markup=False)
    console.print(
        f"{stats.entries} entries, {_size(stats.size_bytes)}, "
        f"oldest {_when(stats.oldest)}, newest {_when(stats.newest)}"
    )
    if stats.by_model:
        table = Table(title="by model", title_justify="left")
        table.add_column("model")
        table.add_column("entries", justify="right")
        for model, entries in stats.by_model.items():
            table.add_row(model, str(entries))
        console.print(table)


@cache_app.command("clear")
def clear_command(
    older_than: Annotated[
        str | None,
        typer.Option("--older-than", help="Only entries older than this: 30m, 12h, 7d, 2w."),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this model's entries.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Remove cached replies (all of them, or the old ones, or one model's)."""
    from gem_eval.cli.render import console
    from gem_eval.models.response_cache import ResponseCache

    age = parse_age(older_than) if older_than is not None else None
    cache = ResponseCache()
    try:
        found = cache.count(age, model)
        if found and not yes:
            typer.confirm(f"remove {found} cached replies from {cache.path}?", abort=True)
        removed = cache.clear(age, model) if found else 0
    finally:
        cache.close()
    console.print(f"removed {removed} cached replies")
