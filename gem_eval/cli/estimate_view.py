"""``gem-eval run --dry-run`` and ``--confirm-above``: a run's estimate as a table, and
the question asked before a run that may cost more than the user allowed."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gem_eval.errors import UserError
from gem_eval.estimate import Amount, RunEstimate

BOUND = "≤ "


_NUMBERS = ("episodes", "calls", "input\ntokens", "output\ntokens", "USD", "wall\ntime")
"""The figures' headers; without rules, two words on two lines so that a column is as
narrow as its numbers."""


def show_estimate(estimate: RunEstimate, out: Console | None = None) -> None:
    """Print the estimate: one row per model and task, totals, then what each figure
    rests on. Ceilings read ``≤ N``; ``unbounded`` and ``unknown`` say why below.

    Numbers are never cut or folded: in a terminal too narrow for the whole table, the
    ``from`` column moves under the table as notes first, then model and task ids fold
    onto a second line (``out``: print there, at its width, as a terminal would).
    """
    from gem_eval.cli.render import console, print_whole

    target = out or console
    figures = _rows(estimate)
    width = target.width if out is not None or console.is_terminal else None
    notes = _notes(estimate)
    table = _table(estimate, figures, _Layout(sources=True, boxed=True))
    if width is not None and _minimum(target, table) > width:
        notes = _source_notes(estimate) + notes
        narrower = (
            _Layout(boxed=True),
            _Layout(),
            _Layout(grouped=True),
            _Layout(grouped=True, fold=True),
        )
        for layout in narrower:
            table = _table(estimate, figures, layout)
            if _minimum(target, table) <= width:
                break
    if out is None:
        print_whole(table)
    else:
        target.print(table)
    for note in notes:
        target.print(f"  {escape(note)}", highlight=False)


@dataclass(frozen=True)
class _Layout:
    """How the table gives way to a narrow terminal, one step at a time.

    Attributes:
        sources: The ``from`` column is shown (else its text goes under the table).
        boxed: Rules between the columns (else two spaces: eight columns of figures fit
            80 columns).
        grouped: A row names each model and its tasks follow, indented (no model
            column), with one space between columns instead of two.
        fold: Ids fold onto a second line: the last resort, the figures stay whole.
    """

    sources: bool = False
    boxed: bool = False
    grouped: bool = False
    fold: bool = False


def _rows(estimate: RunEstimate) -> list[list[str]]:
    """The figures of each row, then of the total when there are several rows."""
    rows = [
        [
            f"{row.episodes:,}",
            count(row.calls),
            count(row.input_tokens),
            count(row.output_tokens),
            usd(row.usd),
            duration(row.wall_s),
        ]
        for row in estimate.rows
    ]
    if len(estimate.rows) > 1:
        rows.append(
            [
                f"{estimate.episodes:,}",
                count(estimate.total("calls")),
                count(estimate.total("input_tokens")),
                count(estimate.total("output_tokens")),
                usd(estimate.total("usd")),
                duration(estimate.wall_s),
            ]
        )
    return rows


def _table(estimate: RunEstimate, figures: list[list[str]], layout: _Layout) -> Table:
    from rich import box

    from gem_eval.cli.render import add_id_column

    if layout.boxed:
        table = Table(title=_title(estimate), title_justify="left")
    else:
        table = Table(
            title=_title(estimate),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
            padding=(0, 0) if layout.grouped else (0, 1),
        )
    models = list(dict.fromkeys(r.model for r in estimate.rows))
    id_columns: list[tuple[str, list[str], str | None]]
    if layout.grouped:
        ids = [*models, *(f"  {r.task_id}" for r in estimate.rows)]
        id_columns = [("model / task", ids, None)]
    else:
        id_columns = [
            ("model", [r.model for r in estimate.rows], "bold"),
            ("task", [r.task_id for r in estimate.rows], "cyan"),
        ]
    for header, column_ids, style in id_columns:
        if layout.fold:
            table.add_column(header, overflow="fold", style=style)
        else:
            add_id_column(table, header, column_ids, style=style)
    for n, two_lines in enumerate(_NUMBERS):
        header = two_lines.replace("\n", " ") if layout.boxed else two_lines
        longest = max(len(line) for line in [*header.split("\n"), *(r[n] for r in figures)])
        table.add_column(header, justify="right", no_wrap=True, min_width=longest)
    if layout.sources:
        table.add_column("from")
    for model in models:
        if layout.grouped:
            table.add_row(f"[bold]{escape(model)}[/]", *[""] * len(_NUMBERS))
        for row, cells in zip(estimate.rows, figures, strict=False):
            if row.model != model:
                continue
            extra = [escape(row.source)] if layout.sources else []
            if layout.grouped:
                table.add_row(f"  [cyan]{escape(row.task_id)}[/]", *cells)
            else:
                table.add_row(escape(row.model), escape(row.task_id), *cells, *extra)
    if len(estimate.rows) > 1:
        table.add_section()
        task = [] if layout.grouped else [""]
        table.add_row("[bold]total[/]", *task, *figures[-1], *([""] if layout.sources else []))
    return table


def _minimum(target: Console, table: Table) -> int:
    """The narrowest the table can be drawn without cutting a no-wrap cell."""
    return target.measure(table, options=target.options.update_width(10_000)).minimum


def _source_notes(estimate: RunEstimate) -> list[str]:
    """The ``from`` column as lines under the table (one line when all rows share it)."""
    sources = list(dict.fromkeys(r.source for r in estimate.rows))
    if len(sources) == 1:
        return [f"from: {sources[0]}"]
    return [f"{r.model} {r.task_id}: from {r.source}" for r in estimate.rows]


def confirm_spend(
    estimate: RunEstimate, threshold_usd: float, *, yes: bool, interactive: bool | None = None
) -> None:
    """Let the run go on, or stop it, under ``--confirm-above threshold_usd``.

    An estimate under the threshold, or ``yes``, goes on silently. Otherwise a terminal
    is asked (no: ``not run``, exit 0, nothing created); without one (CI, a pipe) the run
    is refused.

    Raises:
        UserError: Not a terminal and not ``yes``: says why and how to go on.
        typer.Exit: The user said no (exit 0: nothing was spent or created).
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
    if not typer.confirm(f"{reason}. Run it?"):
        print("not run: nothing spent", file=sys.stderr)
        raise typer.Exit(0)


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
