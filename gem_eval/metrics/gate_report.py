"""The gate's verdict as CI systems read it: JUnit XML and a Markdown step summary.

* JUnit (``gem-eval gate --junit``): one ``<testsuite>``; a ``gate`` testcase holds the
  run's verdict (a ``<failure>`` on a regression, an ``<error>`` when the runs are not
  comparable) and one testcase per task (``model / task`` when the comparison pairs on the
  model) fails where the task dropped significantly by the gate's rule
  (:mod:`gem_eval.metrics.task_verdicts`) and is ``<skipped>`` where it was not judged.
* Markdown (``gem-eval gate --summary``): the verdict, the runs, the paired difference
  and a table of tasks, appended to the file as GitHub's ``$GITHUB_STEP_SUMMARY`` wants.

The writers use the standard library only (:mod:`xml.etree.ElementTree`).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gem_eval.errors import GemEvalError, UserError
from gem_eval.metrics.compare import EXIT_INCOMPARABLE, EXIT_PASS, EXIT_REGRESSION

if TYPE_CHECKING:
    import pandas as pd

    from gem_eval.metrics.compare import Comparison, GateVerdict
    from gem_eval.metrics.task_verdicts import TaskVerdict

MEANINGS = {
    EXIT_PASS: "no significant regression",
    EXIT_REGRESSION: "a significant regression",
    EXIT_INCOMPARABLE: "the runs are not comparable",
}
"""What each exit code a report is written for means."""


@dataclass(frozen=True)
class GateReport:
    """What ``gem-eval gate`` found, for a CI system.

    Attributes:
        status: The verdict: ``pass``, ``fail`` or ``incomparable``.
        exit_code: The gate's exit code (0, 1 or 3).
        base_run: The baseline's run id; ``new_run`` the judged run's.
        suite: The suite the runs played (each testcase's ``classname``).
        lines: The lines the gate printed, its verdict first.
        comparison: The paired comparison of the whole runs (``None`` when the gate did
            not compare them: a run not finished, different scorers).
        tasks: Each task's verdict.
        seconds: How long the gate took.
    """

    status: Literal["pass", "fail", "incomparable"]
    exit_code: int
    base_run: str
    new_run: str
    suite: str
    lines: list[str]
    comparison: Comparison | None = None
    tasks: list[TaskVerdict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def heading(self) -> str:
        """``gem-eval gate FAIL: exit 1, a significant regression``."""
        meaning = MEANINGS.get(self.exit_code, "")
        return f"gem-eval gate {self.status.upper()}: exit {self.exit_code}, {meaning}"


def gate_report(
    verdict: GateVerdict,
    base: pd.DataFrame,
    new: pd.DataFrame,
    *,
    base_run: str,
    new_run: str,
    suite: str,
    lines: list[str],
    max_drop: float,
    alpha: float,
    seconds: float = 0.0,
) -> GateReport:
    """The report of ``verdict`` on the runs' episode frames ``base`` and ``new``, with
    each task judged by the gate's rule at ``max_drop`` and ``alpha`` (skipped, with its
    numbers, when the runs are not comparable)."""
    tasks = []
    if verdict.comparison is not None:
        from gem_eval.metrics.task_verdicts import task_verdicts

        judged = verdict.status != "incomparable"
        tasks = task_verdicts(base, new, verdict.comparison, max_drop, alpha, judged=judged)
    return GateReport(
        verdict.status,
        verdict.exit_code,
        base_run,
        new_run,
        suite,
        lines,
        verdict.comparison,
        tasks,
        seconds,
    )


def check_target(path: Path, option: str) -> None:
    """Refuse, before the gate runs, a report file that could not be written.

    Raises:
        UserError: ``path`` is a directory, its directory does not exist, or neither
            can be written.
    """
    if path.is_dir():
        raise UserError(f"{option} {path}: is a directory")
    if not path.parent.is_dir():
        raise UserError(f"{option} {path}: no directory {path.parent}")
    writable = path if path.exists() else path.parent
    if not os.access(writable, os.W_OK):
        raise UserError(f"{option} {path}: {writable} is not writable")


def junit_xml(report: GateReport) -> str:
    """The report as a JUnit XML document: ``<testsuites>`` holding one ``<testsuite>``."""
    cases = [_verdict_case(report), *(_task_case(report.suite, t) for t in report.tasks)]
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(c.find("failure") is not None for c in cases)),
        "errors": str(sum(c.find("error") is not None for c in cases)),
        "skipped": str(sum(c.find("skipped") is not None for c in cases)),
        "time": _seconds(sum(float(c.get("time", 0)) for c in cases)),
    }
    root = ET.Element("testsuites", {"name": "gem-eval gate", **counts})
    name = f"gem-eval gate {report.new_run} against baseline {report.base_run}"
    stamp = datetime.now().isoformat(timespec="seconds")
    suite = ET.SubElement(root, "testsuite", {"name": name, **counts, "timestamp": stamp})
    properties = ET.SubElement(suite, "properties")
    for key, value in (("baseline", report.base_run), ("run", report.new_run)):
        ET.SubElement(properties, "property", {"name": key, "value": value})
    suite.extend(cases)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _verdict_case(report: GateReport) -> ET.Element:
    case = ET.Element(
        "testcase", {"classname": report.suite, "name": "gate", "time": _seconds(report.seconds)}
    )
    text = "\n".join(report.lines)
    message = report.lines[1].strip() if len(report.lines) > 1 else report.lines[0]
    if report.status == "fail":
        ET.SubElement(case, "failure", {"message": message, "type": "regression"}).text = text
    elif report.status == "incomparable":
        ET.SubElement(case, "error", {"message": message, "type": "incomparable"}).text = text
    else:
        ET.SubElement(case, "system-out").text = text
    return case


def _task_case(suite: str, task: TaskVerdict) -> ET.Element:
    attrs = {"classname": suite, "name": task.name, "time": _seconds(task.seconds)}
    case = ET.Element("testcase", attrs)
    if task.status == "fail":
        ET.SubElement(case, "failure", {"message": task.reason, "type": "regression"})
    elif task.status == "skipped":
        ET.SubElement(case, "skipped", {"message": task.reason})
    else:
        ET.SubElement(case, "system-out").text = task.reason
    return case


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def markdown(report: GateReport) -> str:
    """The report as GitHub-flavoured Markdown: a heading with the verdict, the runs, the
    paired difference, a table of tasks and the gate's own lines."""
    out = [
        f"### {report.heading}",
        "",
        f"Run `{report.new_run}` against baseline `{report.base_run}`, suite `{report.suite}`.",
        "",
    ]
    cmp = report.comparison
    if cmp is not None and cmp.n_pairs:
        out += [
            f"Paired difference (new - base): **{cmp.diff:+.3f}**, {cmp.level:.0%} CI "
            f"[{cmp.ci_low:+.3f}, {cmp.ci_high:+.3f}]; mean score {cmp.base_mean:.3f} -> "
            f"{cmp.new_mean:.3f} over {cmp.n_pairs} pairs of {cmp.n_samples} samples"
            + (" (not judged)." if report.status == "incomparable" else "."),
            "",
        ]
    if report.tasks:
        out += ["| task | base | new | diff | significant drop |", "|---|---:|---:|---:|---|"]
        out += [_row(task) for task in report.tasks]
        out.append("")
    out += ["```text", *report.lines, "```", ""]
    return "\n".join(out)


def _row(task: TaskVerdict) -> str:
    cmp = task.comparison
    numbers = ["-", "-", "-"]
    if cmp is not None and cmp.n_pairs:
        numbers = [f"{cmp.base_mean:.3f}", f"{cmp.new_mean:.3f}", f"{cmp.diff:+.3f}"]
    judged = {"fail": "**yes**", "pass": "no"}.get(task.status, task.reason)
    cells = [_cell(task.name), *numbers, _cell(judged)]
    return "| " + " | ".join(cells) + " |"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_junit(report: GateReport, path: Path) -> Path:
    """Write the report's JUnit XML to ``path`` (replacing it).

    Raises:
        GemEvalError: The file cannot be written.
    """
    return _write(path, junit_xml(report), "w")


def append_markdown(report: GateReport, path: Path) -> Path:
    """Append the report's Markdown to ``path`` (created when missing), after a blank
    line when the file holds text.

    Raises:
        GemEvalError: The file cannot be written.
    """
    text = markdown(report)
    if path.exists() and path.stat().st_size:
        text = "\n" + text
    return _write(path, text, "a")


def _write(path: Path, text: str, mode: Literal["w", "a"]) -> Path:
    try:
        with path.open(mode, encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise GemEvalError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path
