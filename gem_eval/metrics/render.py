"""Leaderboards and comparisons as rich tables, and leaderboards as md, csv, json or html.

Builds renderables and text; printing is the CLI's job.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rich.markup import escape
from rich.table import Table

from gem_eval.outcomes import ERROR_OUTCOMES
from gem_eval.records import DEFAULT_AGENT

if TYPE_CHECKING:
    import pandas as pd

    from gem_eval.metrics.compare import Comparison

FileFormat = Literal["md", "csv", "json", "html"]
FILE_FORMATS: tuple[FileFormat, ...] = ("md", "csv", "json", "html")

_LABELS = {
    "task_id": "task", "run_id": "run", "cost_usd": "cost $", "accuracy": "acc",
    "gave_up": "gave up",
} | {name: name.removesuffix("_error") for name in ERROR_OUTCOMES}  # fmt: skip
_COMPACT_HIDDEN = ("samples", "se", "pass@1", "pass^1")
_ERRORS = (*ERROR_OUTCOMES, "gave_up")
_DIGITS = {"turns": 1, "cost_usd": 4}
_KEYS = ("model", "agent", "task_id", "category", "suite", "run_id", "scorer")
_WORDS = ("errors", "variant")
"""Text columns besides the keys (left-aligned, and wrapped in a narrow terminal)."""
_TITLED = ("suite", "run_id")
"""Key columns a terminal table leaves out when every row holds the same value: its
title names them (a run's summary, a leaderboard of one run)."""


def format_value(column: str, value: Any) -> str:
    """A cell as shown to people: 3 decimals for rates and scores, ``-`` when unknown."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return "-" if value is None or str(value) in ("<NA>", "nan") else str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    number = float(value)
    return "-" if math.isnan(number) else f"{number:,.{_DIGITS.get(column, 3)}f}"


def formatted(frame: pd.DataFrame) -> list[list[str]]:
    """The frame's rows with every cell formatted by :func:`format_value`."""
    columns = list(frame.columns)
    return [
        [format_value(c, v) for c, v in zip(columns, row)]
        for row in frame.itertuples(index=False, name=None)
    ]


def summary_table(frame: pd.DataFrame, title: str | None = None, compact: bool = True) -> Table:
    """A leaderboard frame (from :func:`~gem_eval.metrics.summarize`) as a rich table.

    ``ci_low`` and ``ci_high`` are shown as one ``CI`` column. ``compact`` fits a terminal:
    it leaves out ``samples``, ``se`` (the CI says more), ``pass@1`` and ``pass^1`` (both
    equal ``accuracy``), and shows the error counts in one ``errors`` column. A ``suite``
    or ``run_id`` column that holds one value is left out: the ``title`` should name it.
    The ``agent`` column is shown when a row's agent is not gem-eval's own loop. The
    ``scorer`` column always stays: each row says what its numbers are.
    """
    frame = frame.drop(columns=[c for c in _TITLED if c in frame and frame[c].nunique() == 1])
    if "agent" in frame and (frame["agent"] == DEFAULT_AGENT).all():
        frame = frame.drop(columns=["agent"])
    errors = [c for c in _ERRORS if c in frame.columns] if compact else []
    if compact:
        frame = frame.drop(columns=[c for c in _COMPACT_HIDDEN if c in frame.columns])
    columns = [c for c in frame.columns if c not in errors]
    cells = formatted(frame[columns])
    if errors:
        columns.append("errors")
        for row, counts in zip(cells, frame[errors].itertuples(index=False, name=None)):
            shown = [f"{n} {_LABELS[c]}" for c, n in zip(errors, counts) if n]
            row.append(", ".join(shown) or "-")
    if "ci_low" in columns and "ci_high" in columns:
        low, high = columns.index("ci_low"), columns.index("ci_high")
        for row in cells:
            row[low] = "-" if row[low] == "-" else f"[{row[low]}, {row[high]}]"
            del row[high]
        columns[low] = "CI"
        del columns[high]
    table = Table(title=title, title_justify="left", show_edge=False)
    for i, column in enumerate(columns):
        key = column in _KEYS
        table.add_column(
            _LABELS.get(column, column),
            justify="left" if key or column in _WORDS else "right",
            style="bold cyan" if column == "model" else None,
            no_wrap=key or column in ("CI", "errors"),
            overflow="fold",  # a squeezed header folds; the data keeps its width
            min_width=max((len(row[i]) for row in cells), default=1),
        )
    for row in cells:
        table.add_row(*(escape(c) for c in row))
    return table


def comparison_table(cmp: Comparison) -> Table:
    """The per-task breakdown of a comparison, with the overall row last."""
    table = Table(title=f"new - base, paired on {', '.join(cmp.paired_on)}", title_justify="left")
    table.add_column("task", style="bold cyan", no_wrap=True)
    for name in ("pairs", "base", "new", "diff"):
        table.add_column(name, justify="right")
    for t in cmp.per_task:
        table.add_row(
            escape(t.task_id), str(t.n_pairs), f"{t.base_mean:.3f}", f"{t.new_mean:.3f}",
            _signed(t.diff),
        )  # fmt: skip
    table.add_section()
    table.add_row(
        "[bold]all[/]", str(cmp.n_pairs), f"{cmp.base_mean:.3f}", f"{cmp.new_mean:.3f}",
        _signed(cmp.diff),
    )  # fmt: skip
    return table


def comparison_lines(cmp: Comparison) -> list[str]:
    """The overall difference, its interval and test, the unscored episodes, and the models,
    tasks and samples of one run only (not compared), as text."""
    lines = [
        f"diff {cmp.diff:+.3f} over {cmp.n_pairs} pairs, {cmp.level:.0%} paired bootstrap CI "
        f"[{cmp.ci_low:+.3f}, {cmp.ci_high:+.3f}]"
    ]
    if cmp.mcnemar is not None:
        m = cmp.mcnemar
        lines.append(
            f"McNemar ({m.method}) p={m.p_value:.3g}: {m.only_a} samples pass only in base, "
            f"{m.only_b} only in new"
        )
    lines.append(
        f"unscored episodes (infrastructure errors): base {cmp.base.unscored} of "
        f"{cmp.base.episodes}, new {cmp.new.unscored} of {cmp.new.episodes}"
    )
    return lines + cmp.unpaired()


def _signed(diff: float) -> str:
    if math.isnan(diff):
        return "-"
    colour = "red" if diff < 0 else "green" if diff > 0 else ""
    return f"[{colour}]{diff:+.3f}[/]" if colour else f"{diff:+.3f}"


def to_text(frame: pd.DataFrame, format: FileFormat) -> str:
    """The frame as text: ``md`` and ``html`` formatted for people, ``csv`` and ``json``
    with full-precision numbers (json: a list of records, nan as null).

    Raises:
        ValueError: An unknown format.
    """
    if format == "csv":
        return str(frame.to_csv(index=False))
    if format == "json":
        return str(frame.to_json(orient="records", indent=2)) + "\n"
    if format == "md":
        return _markdown(list(map(str, frame.columns)), formatted(frame))
    if format == "html":
        import pandas as pd

        shown = pd.DataFrame(formatted(frame), columns=frame.columns)
        return str(shown.to_html(index=False, border=0, classes="gem-eval-leaderboard")) + "\n"
    raise ValueError(f"unknown format {format!r}; one of {', '.join(FILE_FORMATS)}")


def write_table(frame: pd.DataFrame, format: FileFormat, path: str | Path) -> Path:
    """Write the frame to ``path`` in ``format`` (see :func:`to_text`); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(to_text(frame, format), encoding="utf-8")
    return target


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    align = ["---" if h in _KEYS or h in _WORDS else "---:" for h in header]
    return "\n".join([line(header), line(align), *(line(r) for r in rows)]) + "\n"
