"""The report's plots, drawn by matplotlib as SVG text to inline in the page.

matplotlib draws without a server, a browser or a network, and an inline SVG needs no
script to show. Each model keeps one colour across plots; each model's points are one
element with id ``<plot>-marks-<model number>`` (one ``<use>`` per point), which the
browser tests count. matplotlib is imported here only, when a report is built.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gem_eval.errors import UserError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PALETTE = (
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
    "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac",
)  # fmt: skip
"""One colour per model, in the order of :func:`model_colours` (Tableau 10)."""

Row = dict[str, Any]


def model_colours(models: Sequence[str]) -> dict[str, str]:
    """A stable colour per model: models sorted by name take the palette in turn."""
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(sorted(set(models)))}


def scores_by(rows: Sequence[Row], key: str, colours: dict[str, str], plot: str) -> str:
    """Mean score with its CI per ``key`` value (a task or category), one row of dots per
    value, models side by side."""
    groups = sorted({str(r[key]) for r in rows})
    fig, ax = _figure(width=7.0, height=max(1.8, 0.45 * len(groups) + 1.0))
    models = sorted(colours)
    step = 0.7 / max(1, len(models))
    for i, model in enumerate(models):
        mine = [r for r in rows if r["model"] == model and _num(r.get("score")) is not None]
        ys = [groups.index(str(r[key])) - 0.35 + step * (i + 0.5) for r in mine]
        xs = [float(r["score"]) for r in mine]
        _bars(ax, xs, ys, [_err(r) for r in mine], colours[model], horizontal=True)
        ax.plot(xs, ys, "o", color=colours[model], label=model, gid=f"{plot}-marks-{i}")
    ax.set_yticks(range(len(groups)), groups)
    ax.invert_yaxis()
    ax.set_xlabel("mean score (95% bootstrap CI)")
    ax.set_xlim(-0.05, 1.05)
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig, ax)


def score_against(
    rows: Sequence[Row], x: str, label: str, colours: dict[str, str], plot: str
) -> str:
    """One point per model: mean score (with its CI) against column ``x``."""
    fig, ax = _figure(width=4.6, height=3.2)
    for i, model in enumerate(sorted(colours)):
        mine = [r for r in rows if r["model"] == model]
        pts = [
            (v, r)
            for r in mine
            if (v := _num(r.get(x))) is not None and _num(r.get("score")) is not None
        ]
        xs, ys = [v for v, _ in pts], [float(r["score"]) for _, r in pts]
        _bars(ax, xs, ys, [_err(r) for _, r in pts], colours[model], horizontal=False)
        ax.plot(xs, ys, "o", color=colours[model], label=model, gid=f"{plot}-marks-{i}")
    ax.set_xlabel(label)
    ax.set_ylabel("mean score")
    ax.grid(alpha=0.3)
    return _svg(fig, ax)


def pass_curves(rows: Sequence[Row], colours: dict[str, str], plot: str = "passk") -> str:
    """pass@k against k, one line per model (the leaderboard's pass@k columns)."""
    ks = sorted({int(c[5:]) for r in rows for c in r if c.startswith("pass@")})
    fig, ax = _figure(width=4.6, height=3.2)
    for i, model in enumerate(sorted(colours)):
        pts = [
            (k, v)
            for r in rows
            if r["model"] == model
            for k in ks
            if (v := _num(r.get(f"pass@{k}"))) is not None
        ]  # rows are per model: one line each
        xs, ys = [k for k, _ in pts], [v for _, v in pts]
        ax.plot(xs, ys, "o-", color=colours[model], label=model, gid=f"{plot}-marks-{i}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (attempts)")
    ax.set_ylabel("pass@k")
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    return _svg(fig, ax)


def _figure(width: float, height: float) -> tuple[Figure, Axes]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError(
            "reports draw their plots with matplotlib: pip install matplotlib"
        ) from None
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def _bars(
    ax: Axes, xs: list[float], ys: list[float], errs: list[tuple[float, float]], colour: str,
    *, horizontal: bool,
) -> None:  # fmt: skip
    """Error bars from each point's CI (points without one get none)."""
    low = [e[0] for e in errs]
    high = [e[1] for e in errs]
    if not xs:
        return
    if horizontal:
        ax.errorbar(xs, ys, xerr=[low, high], fmt="none", ecolor=colour, capsize=3, lw=1)
    else:
        ax.errorbar(xs, ys, yerr=[low, high], fmt="none", ecolor=colour, capsize=3, lw=1)


def _err(row: Row) -> tuple[float, float]:
    score, low, high = _num(row.get("score")), _num(row.get("ci_low")), _num(row.get("ci_high"))
    if score is None or low is None or high is None:
        return 0.0, 0.0
    return max(0.0, score - low), max(0.0, high - score)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


def _svg(fig: Figure, ax: Axes) -> str:
    import matplotlib

    if ax.get_legend_handles_labels()[0]:
        # Beside the axes, not on them: it must never hide a point.
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "gem-eval"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]
