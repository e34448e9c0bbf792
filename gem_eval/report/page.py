"""The report page: one self-contained HTML file (styles, script, plots and data inlined).

The page's data is one JSON blob (runs, leaderboards, comparison, one summary row per
episode); the transcripts are a second blob of base64 gzip strings that the script reads
only when an episode is opened, so a run of 10,000 episodes opens at once.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from gem_eval.report import plots
from gem_eval.report.data import ReportData

_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head><body>
<header><h1>{title}</h1><div id="runs"></div></header>
<nav>{nav}</nav>
<section id="leaderboard"><h2>Leaderboard</h2>
<p>By <select id="board-by"><option>model</option><option>task</option><option>category</option>
</select> &middot; click a header to sort. The numbers of <code>gem-eval leaderboard
--format json</code>; scores and CIs are over samples, cost and tokens over all episodes.</p>
<div class="scroll"><table id="board"></table></div></section>
{comparison}
{phases}
<section id="plots"><h2>Plots</h2><div class="plots">{plots}</div></section>
<section id="episodes"><h2>Episodes</h2>
<div class="filters">
<label>run <select id="f-run"><option value="">all</option></select></label>
<label>model <select id="f-model"><option value="">all</option></select></label>
<label>task <select id="f-task"><option value="">all</option></select></label>
<label>outcome <select id="f-outcome"><option value="">all</option></select></label>
<label>score <select id="f-score"><option value="">any</option><option value="fail">&lt; 1
</option><option value="zero">0</option><option value="pass">1</option>
<option value="none">unscored</option></select></label>
<label>key <input id="f-key" placeholder="text in the key"></label>
<span id="f-count"></span></div>
<div class="scroll"><table id="episode-list"></table></div>
<div id="pager"><button id="prev">&larr;</button> <span id="page"></span>
<button id="next">&rarr;</button></div>
<div id="episode"></div></section>
<script type="application/json" id="gem-data">{data}</script>
<script type="application/json" id="gem-transcripts">{transcripts}</script>
<script>{js}</script>
</body></html>
"""


def render(data: ReportData, title: str = "gem-eval report") -> str:
    """The whole page as HTML text."""
    figures = _plots(data)
    colours = plots.model_colours([str(r["model"]) for r in data.boards.get("model", [])])
    blob = data.page_data() | {"colours": colours}
    nav = " ".join(
        f'<a href="#{anchor}">{name}</a>'
        for anchor, name in [
            ("leaderboard", "leaderboard"),
            *([("comparison", "comparison")] if data.gate else []),
            *([("phases", "phases")] if any(r.get("phases") for r in data.runs) else []),
            ("plots", "plots"),
            ("episodes", "episodes"),
        ]
    )
    return _TEMPLATE.format(
        title=html.escape(title),
        css=_static("report.css"),
        js=_static("report.js"),
        nav=nav,
        comparison=_comparison(data),
        phases=_phases(data),
        plots="".join(
            f'<figure id="plot-{name}"><figcaption>{caption}</figcaption>{svg}</figure>'
            for name, caption, svg in figures
        ),
        data=_script_json(blob),
        transcripts=_script_json(data.transcripts),
    )


def _plots(data: ReportData) -> list[tuple[str, str, str]]:
    """(id, caption, svg) of every plot the data supports."""
    by_model = data.boards.get("model", [])
    if not by_model:
        return []
    colours = plots.model_colours([str(r["model"]) for r in by_model])
    runs = [(str(r["run_id"]), str(r.get("label") or r["run_id"])) for r in data.runs]
    out = [
        (
            "task",
            "Score per task",
            plots.scores_by(data.boards["task"], "task_id", colours, "task", runs),
        ),
        (
            "category",
            "Score per category",
            plots.scores_by(data.boards["category"], "category", colours, "category", runs),
        ),
    ]
    if any(plots._num(r.get("cost_usd")) is not None for r in by_model):
        svg = plots.score_against(by_model, "cost_usd", "total cost (USD)", colours, "cost", runs)
        out.append(("cost", "Score against cost", svg))
    svg = plots.score_against(by_model, "turns", "mean turns", colours, "turns", runs)
    out.append(("turns", "Score against mean turns", svg))
    if any(k.startswith("pass@") for r in by_model for k in r):
        svg = plots.pass_curves(by_model, colours, runs=runs)
        out.append(("passk", "pass@k (epochs &gt; 1)", svg))
    return out


def _comparison(data: ReportData) -> str:
    """The gate verdict and the paired comparison (static HTML: it is small)."""
    if data.gate is None:
        return ""
    gate, cmp = data.gate, data.comparison
    e = html.escape
    parts = [
        '<section id="comparison"><h2>Gate and paired comparison</h2>',
        f'<p>gate <b class="verdict {e(gate["status"])}" id="gate-status">'
        f"{e(gate['status'].upper())}</b>: new <code>{e(gate['new'])}</code> against "
        f"baseline <code>{e(gate['base'])}</code> (max drop 0.02, alpha 0.05)</p>",
        "<ul>" + "".join(f"<li>{e(r)}</li>" for r in gate["reasons"]) + "</ul>",
    ]
    if cmp:
        parts.append(
            f"<p>new &minus; base = <b>{_signed(cmp['diff'])}</b> over {cmp['n_pairs']} pairs "
            f"({cmp['n_samples']} samples), {cmp['level']:.0%} paired bootstrap CI "
            f"[{_signed(cmp['ci_low'])}, {_signed(cmp['ci_high'])}]; base "
            f"{_fmt(cmp['base_mean'])}, new {_fmt(cmp['new_mean'])}.</p>"
        )
        if cmp.get("mcnemar"):
            m = cmp["mcnemar"]
            parts.append(
                f"<p>McNemar ({e(str(m.get('method')))}) p={_p(m.get('p_value'))}: "
                f"{m.get('only_a')} samples pass only in base, {m.get('only_b')} only in new.</p>"
            )
        rows = "".join(
            f"<tr><td>{e(t['task_id'])}</td><td>{t['n_pairs']}</td><td>{_fmt(t['base_mean'])}"
            f"</td><td>{_fmt(t['new_mean'])}</td><td>{_signed(t['diff'])}</td></tr>"
            for t in cmp["per_task"]
        )
        parts.append(
            '<table id="comparison-table"><thead><tr><th>task</th><th>pairs</th><th>base</th>'
            f"<th>new</th><th>diff</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    parts.append("</section>")
    return "\n".join(parts)


def _phases(data: ReportData) -> str:
    """Where an episode's time went, per run: the mean seconds of each phase (sandbox
    start, set-up, the agent, the verifier, the audit ...), when its episodes timed them."""
    runs = [r for r in data.runs if r.get("phases")]
    if not runs:
        return ""
    from gem_eval.phases import PHASES

    names = [p for p in PHASES if any(p in r["phases"] for r in runs)]
    e = html.escape
    head = "".join(f"<th>{e(p)}</th>" for p in names)
    rows = "".join(
        f"<tr><td>{e(str(r['label']))}</td><td>{r['phases_timed']}</td>"
        + "".join(f"<td>{r['phases'].get(p, 0.0):.2f}</td>" for p in names)
        + f"<td>{sum(r['phases'].values()):.2f}</td></tr>"
        for r in runs
    )
    return (
        '<section id="phases"><h2>Where the time went</h2><p>Mean seconds per episode in '
        "each phase (<code>sandbox_wait</code> is waiting for a sandbox slot, not work).</p>"
        f'<table id="phases-table"><thead><tr><th>run</th><th>episodes</th>{head}'
        f"<th>total</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _p(value: Any) -> str:
    """A p-value as ``gem-eval compare`` prints it: 3 significant digits (5.62e-07)."""
    return "-" if value is None else f"{value:.3g}"


def _signed(value: Any) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: ``<`` only occurs in strings, as ``\\u003c``."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, default=str)
    return text.replace("<", "\\u003c")


def _static(name: str) -> str:
    return resources.files("gem_eval.report").joinpath("static").joinpath(name).read_text("utf-8")
