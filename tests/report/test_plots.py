"""The report's plots: one mark per model and group, error bars from the CIs, and
nothing drawn for what is unknown."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from gem_eval.report import plots

SVG = "{http://www.w3.org/2000/svg}"
ROWS: list[dict[str, Any]] = [
    {"model": "b", "task_id": "t1", "score": 0.5, "ci_low": 0.2, "ci_high": 0.8,
     "cost_usd": 0.12, "turns": 3.0, "pass@1": 0.5, "pass@2": 0.7},
    {"model": "a", "task_id": "t1", "score": 0.9, "ci_low": 0.8, "ci_high": 1.0,
     "cost_usd": None, "turns": 2.0, "pass@1": 0.9, "pass@2": 0.95},
    {"model": "a", "task_id": "t2", "score": None, "ci_low": None, "ci_high": None,
     "cost_usd": 0.3, "turns": None, "pass@1": None, "pass@2": None},
]  # fmt: skip


def marks(svg: str, plot: str) -> dict[str, int]:
    """Points per model (by colour order) in an SVG drawn by :mod:`gem_eval.report.plots`."""
    root = ET.fromstring(svg)
    out = {}
    for group in root.iter(f"{SVG}g"):
        found = re.fullmatch(f"{plot}-marks-(\\d+)", group.get("id", ""))
        if found:
            out[found.group(1)] = len(list(group.iter(f"{SVG}use")))
    return out


def test_models_keep_one_colour_in_name_order() -> None:
    colours = plots.model_colours(["b", "a", "b"])
    assert list(colours) == ["a", "b"] and colours["a"] != colours["b"]


def test_scores_by_task_draw_only_known_scores() -> None:
    svg = plots.scores_by(ROWS, "task_id", plots.model_colours(["a", "b"]), "task")
    assert marks(svg, "task") == {"0": 1, "1": 1}  # a's t2 has no score
    assert svg.startswith("<svg") and "t2" in svg  # the task is on its axis still


def test_score_against_cost_leaves_out_unknown_costs() -> None:
    colours = plots.model_colours(["a", "b"])
    assert marks(plots.score_against(ROWS, "cost_usd", "cost", colours, "cost"), "cost") == {
        "0": 0,
        "1": 1,
    }
    assert marks(plots.score_against(ROWS, "turns", "turns", colours, "turns"), "turns") == {
        "0": 1,
        "1": 1,
    }


def test_pass_curves_have_a_point_per_k() -> None:
    svg = plots.pass_curves(ROWS, plots.model_colours(["a", "b"]))
    assert marks(svg, "passk") == {"0": 2, "1": 2}


def test_each_run_has_its_own_marks() -> None:
    runs = [("r1", "baseline"), ("r2", "new")]
    rows = [
        {**row, "run_id": run_id, "score": score}
        for run_id, score in (("r1", 0.25), ("r2", 0.75))
        for row in ROWS[:2]
    ]
    colours = plots.model_colours(["a", "b"])
    svg = plots.scores_by(rows, "task_id", colours, "task", runs)
    assert marks(svg, "task") == {}  # no element holds a model's points of both runs
    found = {
        g.get("id"): len(list(g.iter(f"{SVG}use")))
        for g in ET.fromstring(svg).iter(f"{SVG}g")
        if g.get("id", "").startswith("task-marks-")
    }
    assert found == {"task-marks-0-run0": 1, "task-marks-0-run1": 1,
                     "task-marks-1-run0": 1, "task-marks-1-run1": 1}  # fmt: skip
    assert "baseline" in svg and "new" in svg  # the legend names the runs
    curves = plots.pass_curves(rows, colours, runs=runs)
    assert 'id="passk-marks-0-run1"' in curves  # a line per run, never one across them
