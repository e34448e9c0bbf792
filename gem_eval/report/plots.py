"""The report's plots, drawn by matplotlib as SVG text to inline in the page.

matplotlib draws without a server, a browser or a network, and an inline SVG needs no
script to show. Each model keeps one colour across plots; each model's points are one
element with id ``<plot>-marks-<model number>`` (one ``<use>`` per point), which the
browser tests count. A leaderboard row never spans two runs: when a report holds several,
each run has its own marker (and a model's points in run ``j`` are the element
``<plot>-marks-<model number>-run<j>``), so that the baseline's point and the new run's
are told apart, never joined. matplotlib is imported here only, when a report is built.
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

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""One marker per run, in the order the report lists them."""

Row = dict[str, Any]
Runs = Sequence[tuple[str, str]]
"""The report's runs as ``(run id, label)``, in order; empty: the rows are one run."""


def model_colours(models: Sequence[str]) -> dict[str, str]:
    """A stable colour per model: models sorted by name take the palette in turn."""
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(sorted(set(models)))}


def scores_by(
    rows: Sequence[Row], key: str, colours: dict[str, str], plot: str, runs: Runs = ()
) -> str:
    """Mean score with its CI per ``key`` value (a task or category), one row of dots per
    value, models (and within a model, runs) side by side."""
    groups = sorted({str(r[key]) for r in rows})
    fig, ax = _figure(width=7.0, height=max(1.8, 0.45 * len(groups) + 1.0))
    models = sorted(colours)
    step = 0.7 / max(1, len(models))
    for i, model in enumerate(models):
        scored = [r for r in rows if r["model"] == model and _num(r.get("score")) is not None]
        for j, mine, gid in _per_run(scored, runs, f"{plot}-marks-{i}"):
            offset = (j + 0.5) / max(1, len(runs))
            ys = [groups.index(str(r[key])) - 0.35 + step * (i + offset) for r in mine]
            xs = [float(r["score"]) for r in mine]
            _bars(ax, xs, ys, [_err(r) for r in mine], colours[model], horizontal=True)
            _marks(ax, xs, ys, colours[model], model, j, gid)
    ax.set_yticks(range(len(groups)), groups)
    ax.invert_yaxis()
    ax.set_xlabel("mean score (95% bootstrap CI)")
    ax.set_xlim(-0.05, 1.05)
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig, ax, runs)


def score_against(
    rows: Sequence[Row], x: str, label: str, colours: dict[str, str], plot: str,
    runs: Runs = (),
) -> str:  # fmt: skip
    """One point per model (and run): mean score (with its CI) against column ``x``."""
    fig, ax = _figure(width=4.6, height=3.2)
    for i, model in enumerate(sorted(colours)):
        known = [
            r
            for r in rows
            if r["model"] == model
            and _num(r.get(x)) is not None
            and _num(r.get("score")) is not None
        ]
        for j, mine, gid in _per_run(known, runs, f"{plot}-marks-{i}"):
            xs, ys = [float(r[x]) for r in mine], [float(r["score"]) for r in mine]
            _bars(ax, xs, ys, [_err(r) for r in mine], colours[model], horizontal=False)
            _marks(ax, xs, ys, colours[model], model, j, gid)
    ax.set_xlabel(label)
    ax.set_ylabel("mean score")
    ax.grid(alpha=0.3)
    return _svg(fig, ax, runs)


def pass_curves(
    rows: Sequence[Row], colours: dict[str, str], plot: str = "passk", runs: Runs = ()
) -> str:
    """pass@k against k, one line per model and run (the leaderboard's pass@k columns)."""
    ks = sorted({int(c[5:]) for r in rows for c in r if c.startswith("pass@")})
    fig, ax = _figure(width=4.6, height=3.2)
    for i, model in enumerate(sorted(colours)):
        mine = [r for r in rows if r["model"] == model]
        for j, part, gid in _per_run(mine, runs, f"{plot}-marks-{i}"):
            pts = [(k, v) for r in part for k in ks if (v := _num(r.get(f"pass@{k}"))) is not None]
            xs, ys = [float(k) for k, _ in pts], [v for _, v in pts]
            _marks(ax, xs, ys, colours[model], model, j, gid, line=True)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (attempts)")
    ax.set_ylabel("pass@k")
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    return _svg(fig, ax, runs)


def _per_run(rows: list[Row], runs: Runs, gid: str) -> list[tuple[int, list[Row], str]]:
    """``(run number, its rows, element id)`` per run; one entry when the rows are one run
    (or pool runs: rows without a ``run_id``)."""
    if len(runs) < 2 or not all("run_id" in r for r in rows):
        return [(0, rows, gid)]
    return [
        (j, [r for r in rows if r.get("run_id") == run_id], f"{gid}-run{j}")
        for j, (run_id, _) in enumerate(runs)
    ]


def _marks(
    ax: Axes, xs: list[float], ys: list[float], colour: str, model: str, run: int, gid: str,
    *, line: bool = False,
) -> None:  # fmt: skip
    """A model's points in one run: its colour, the run's marker."""
    style = MARKERS[run % len(MARKERS)] + ("-" if line else "")
    ax.plot(xs, ys, style, color=colour, label=model, gid=gid)


def _figure(width: float, height: float) -> tuple[Figure, Axes]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError(
            "reports draw their plots with matplotlib: pip install 'gem-eval[report]'"
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


def _svg(fig: Figure, ax: Axes, runs: Runs = ()) -> str:
    import matplotlib
    from matplotlib.lines import Line2D

    named: dict[str, Any] = {}  # a model once, though it has a line per run
    for handle, label in zip(*ax.get_legend_handles_labels()):
        named.setdefault(label, handle)
    handles, labels = list(named.values()), list(named)
    if len(runs) > 1:  # which marker is which run
        for j, (_, name) in enumerate(runs):
            marker = MARKERS[j % len(MARKERS)]
            handles.append(Line2D([], [], marker=marker, color="#555", linestyle="none"))
            labels.append(name)
    if handles:
        # Beside the axes, not on them: it must never hide a point.
        ax.legend(
            handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
            frameon=False,
        )  # fmt: skip
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "gem-eval"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]
