"""``gem-eval cache stats`` and ``cache clear``: the model-response cache."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from gem_eval.errors import UserError

cache_app = typer.Typer(
    help="Inspect and clear the model-response cache (filled by `run --cache`): one SQLite "
    "file, $GEM_EVAL_CACHE/responses/responses.sqlite (GEM_EVAL_CACHE defaults to "
    "~/.cache/gem-eval).",
    no_args_is_help=True,
)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_UNIT_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_AGE = re.compile(rf"(\d+(?:\.\d+)?)([{''.join(_UNITS)}])")
UNITS_HELP = ", ".join(f"{unit} ({_UNIT_NAMES[unit]})" for unit in _UNITS)
"""The units an age accepts, for help and errors: every key of ``_UNITS``."""


def parse_age(text: str) -> float:
    """Seconds in an age such as ``30m``, ``12h``, ``7d`` or ``2w``.

    Raises:
        UserError: Not a number followed by one of s, m, h, d, w.
    """
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise UserError(
            f"--older-than {text!r}: write a number and a unit, e.g. 30m, 12h, 7d "
            f"(units: {', '.join(_UNITS)})"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def _interactive() -> bool:
    """Whether a person can answer a question (stdin is a terminal)."""
    return sys.stdin.isatty()


def _existing_cache() -> Path | None:
    """The cache's file, or ``None`` (and a line saying so) when nothing was cached yet:
    looking must not create it."""
    from gem_eval.cli.render import console
    from gem_eval.models.response_cache import default_path

    path = default_path()
    if path.exists():
        return path
    console.print(f"no response cache yet at {path}", markup=False, highlight=False, soft_wrap=True)
    return None


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

    path = _existing_cache()
    if path is None:
        return
    cache = ResponseCache(path)
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
        typer.Option(
            "--older-than",
            metavar="AGE",
            help=f"Only entries older than AGE: a number and a unit, e.g. 30m, 12h, 7d, 2w. "
            f"Units: {UNITS_HELP}.",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this model's entries.")] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask (needed without a terminal).")
    ] = False,
) -> None:
    """Remove cached replies (all of them, or the old ones, or one model's).

    On a terminal it asks first (no: nothing is removed, exit 0); without one (a pipe,
    CI) it is refused unless --yes is given."""
    from gem_eval.cli.render import console
    from gem_eval.models.response_cache import ResponseCache

    age = parse_age(older_than) if older_than is not None else None
    path = _existing_cache()
    if path is None:
        return
    cache = ResponseCache(path)
    try:
        found = cache.count(age, model)
        if found and not yes:
            question = f"remove {found} cached replies from {cache.path}?"
            if not _interactive():
                raise UserError(f"{question[:-1]}: not a terminal to ask, pass --yes")
            if not typer.confirm(question):
                console.print("not cleared: nothing removed", highlight=False)
                return
        removed = cache.clear(age, model) if found else 0
        models = cache.stats().by_model if model is not None and not removed else {}
    finally:
        cache.close()
    line = f"removed {removed} cached replies"
    if model is not None and model not in models and not removed:
        held = ", ".join(models) if models else "none"
        line += f" (no reply of {model}; the cache holds replies of: {held})"
    console.print(line, markup=False, highlight=False, soft_wrap=True)
