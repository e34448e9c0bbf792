"""``gem-eval run --dry-run`` and ``--confirm-above``: a run's estimate as a table, and
the question asked before a run that may cost more than the user allowed."""

from __future__ import annotations

import math
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gem_eval.errors import UserError
from gem_eval.estimate import Amount, RunEstimate

BOUND = "≤ "


def show_estimate(estimate: RunEstimate, out: Console | None = None) -> None:
    """Print the estimate: one row per model and task, totals, then what each figure
    rests on. Ceilings read ``≤ N``; ``unbounded`` and ``unknown`` say why below."""
    from gem_eval.cli.render import add_id_column, console, print_whole

    table = Table(title=_title(estimate), title_justify="left")
    add_id_column(table, "model", [r.model for r in estimate.rows], style="bold")
    add_id_column(table, "task", [r.task_id for r in estimate.rows], style="cyan")
    for header in ("episodes", "calls", "input tokens", "output tokens", "USD", "wall time"):
        table.add_column(header, justify="right")
    table.add_column("from")
    for row in estimate.rows:
        table.add_row(
            escape(row.model),
            escape(row.task_id),
            f"{row.episodes:,}",
            count(row.calls),
            count(row.input_tokens),
            count(row.output_tokens),
            usd(row.usd),
            duration(row.wall_s),
            escape(row.source),
        )
    if len(estimate.rows) > 1:
        table.add_section()
        table.add_row(
            "[bold]total[/]",
            "",
            f"{estimate.episodes:,}",
            count(estimate.total("calls")),
            count(estimate.total("input_tokens")),
            count(estimate.total("output_tokens")),
            usd(estimate.total("usd")),
            duration(estimate.wall_s),
            "",
        )
    target = out or console
    if out is None:
        print_whole(table, drop=("from",))
    else:
        target.print(table)
    for note in _notes(estimate):
        target.print(f"  {escape(note)}", highlight=False)


def confirm_spend(
    estimate: RunEstimate, threshold_usd: float, *, yes: bool, interactive: bool | None = None
) -> None:
    """Let the run go on, or stop it, under ``--confirm-above threshold_usd``.

    An estimate under the threshold, or ``yes``, goes on silently. Otherwise a terminal
    is asked (no: ``typer.Abort``); without one (CI, a pipe) the run is refused.

    Raises:
        UserError: Not a terminal and not ``yes``: says why and how to go on.
        typer.Abort: The user said no.
    """
    reason = estimate.exceeds(threshold_usd)
    if reason is None or yes:
        return
    if interactive is None:
        interactive = sys.stdin.isatty()
    if not interactive:
        raise UserError(f"{reason} (--confirm-above): pass --yes to run it anyway")
    import typer

    show_estimate(estimate)
    typer.confirm(f"{reason}. Run it?", abort=True)


def count(amount: Amount) -> str:
    """A number of calls or tokens: ``1,234``, ``≤ 1,234``, ``unbounded`` or ``unknown``."""
    if amount.value is None:
        return _missing(amount)
    value = math.ceil(amount.value) if amount.bound else round(amount.value)
    return f"{BOUND if amount.bound else ''}{value:,}"


def usd(amount: Amount) -> str:
    if amount.value is None:
        return _missing(amount)
    if amount.value == 0:
        return "$0"
    digits = 2 if amount.value >= 1 else 4
    return f"{BOUND if amount.bound else ''}${amount.value:,.{digits}f}"


def duration(amount: Amount) -> str:
    if amount.value is None:
        return _missing(amount)
    if 0 < amount.value < 0.5:
        return f"{BOUND if amount.bound else ''}<1s"
    seconds = round(amount.value)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = (
        f"{hours}h {minutes:02d}m"
        if hours
        else f"{minutes}m {secs:02d}s"
        if minutes
        else f"{secs}s"
    )
    return f"{BOUND if amount.bound else ''}{text}"


def _missing(amount: Amount) -> str:
    return "unbounded" if amount.bound else "unknown"


def _title(estimate: RunEstimate) -> str:
    title = f"estimate: {estimate.episodes:,} episodes at concurrency {estimate.concurrency}"
    if any(not r.from_history for r in estimate.rows):
        title += " (≤ N: a ceiling from the limits, not an expectation)"
    return title


def _notes(estimate: RunEstimate) -> list[str]:
    """What the figures rest on: each model's price and each task's prompt, once."""
    lines = list(estimate.notes)
    prices = {f"{r.model}: {r.price_note}": None for r in estimate.rows if r.price_note}
    prompts = {f"{r.task_id}: {r.prompt_note}": None for r in estimate.rows if r.prompt_note}
    lines += [*prices, *prompts]
    if estimate.unpriced:
        known = usd(Amount(estimate.total_usd, any(r.usd.bound for r in estimate.rows)))
        lines.append(f"USD of the rows priced: {known}; the others are unknown or unbounded")
    return lines
