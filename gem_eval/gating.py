"""``gem_eval.gate``: did a new run regress from its baseline? Decided as ``gem-eval gate``
decides it, from the runs in a results directory.

For a training loop that checks each checkpoint::

    import gem_eval

    result = gem_eval.evaluate("smoke", models=["hosted_vllm/ckpt-1200"], base_url=URL)
    verdict = gem_eval.gate(result.run_id, baseline="2026-12-01T09-00-00-smoke-ab12cd")
    if not verdict.passed:
        print("\\n".join(verdict.lines))   # what `gem-eval gate` prints

A :class:`GateRequest` carries the gate's settings (the CLI builds the same one from its
options); :func:`judge` reads both runs from the results index and decides. Nothing is
printed; JUnit XML and a Markdown summary are written when asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from gem_eval.metrics.compare import GateVerdict


@dataclass(frozen=True)
class GateRequest:
    """What the gate is asked: ``new_run`` against ``baseline`` (run ids or ``latest``).

    Attributes:
        max_drop: The largest tolerated drop in mean score (absolute, in [0, 1]).
        alpha: The one-sided significance level, in (0, 0.5).
        max_infra_error_rate: The share of unscored episodes above which the runs are
            not comparable.
        allow_subset: Judge the part both runs played when the new run lacks models,
            tasks or samples of the baseline (else: incomparable).
        junit: Also write the verdict as JUnit XML here.
        summary: Also append a Markdown summary here (GitHub's step summary).
    """

    new_run: str
    baseline: str
    results_dir: Path = Path("results")
    max_drop: float = 0.02
    alpha: float = 0.05
    max_infra_error_rate: float = 0.1
    allow_subset: bool = False
    junit: Path | None = None
    summary: Path | None = None

    def check(self, name: Callable[[str], str] = str) -> None:
        """Refuse bad settings before anything is read; ``name`` turns a field's name
        into the one the user gave (the CLI's ``--max-drop``).

        Raises:
            UserError: A setting out of range, or a report file that cannot be written.
        """
        if not 0 < self.alpha < 0.5:
            raise UserError(f"{name('alpha')} must lie in (0, 0.5)")
        if not 0 <= self.max_drop <= 1:
            raise UserError(f"{name('max_drop')} must lie in [0, 1], got {self.max_drop:g}")
        if not 0 <= self.max_infra_error_rate <= 1:
            raise UserError(f"{name('max_infra_error_rate')} must lie in [0, 1]")
        from gem_eval.metrics.gate_report import check_target

        for field_name in ("junit", "summary"):
            path = getattr(self, field_name)
            if path is not None:
                check_target(Path(path), name(field_name))
        if (
            self.junit
            and self.summary
            and Path(self.junit).resolve() == Path(self.summary).resolve()
        ):
            raise UserError(
                f"{name('junit')} and {name('summary')} are one file, {self.junit}: give two"
            )


@dataclass(frozen=True)
class GateResult:
    """The gate's answer.

    Attributes:
        verdict: The decision (status, exit code, reasons, the paired comparison).
        base_run: The baseline's run id.
        new_run: The new run's id (``latest`` resolved).
        lines: What ``gem-eval gate`` prints: the verdict, then why.
    """

    verdict: GateVerdict
    base_run: str
    new_run: str
    lines: tuple[str, ...]

    @property
    def status(self) -> str:
        """``pass``, ``fail`` (a significant regression) or ``incomparable``."""
        return self.verdict.status

    @property
    def exit_code(self) -> int:
        """The code ``gem-eval gate`` exits with: 0 pass, 1 fail, 3 incomparable."""
        return self.verdict.exit_code

    @property
    def passed(self) -> bool:
        """No significant regression, between runs that compare."""
        return self.verdict.status == "pass"


def gate(
    new_run: str,
    baseline: str,
    *,
    results_dir: str | Path = "results",
    max_drop: float = 0.02,
    alpha: float = 0.05,
    max_infra_error_rate: float = 0.1,
    allow_subset: bool = False,
    junit: str | Path | None = None,
    summary: str | Path | None = None,
) -> GateResult:
    """Decide whether ``new_run`` regressed from ``baseline`` (see :class:`GateRequest`).

    Raises:
        UserError: An unknown run, the baseline itself, a setting out of range.
    """
    request = GateRequest(
        new_run,
        baseline,
        Path(results_dir),
        max_drop,
        alpha,
        max_infra_error_rate,
        allow_subset,
        None if junit is None else Path(junit),
        None if summary is None else Path(summary),
    )
    request.check()
    return judge(request)


def judge(request: GateRequest) -> GateResult:
    """Read both runs from the results index, decide, and write the reports asked for.

    Raises:
        UserError: An unknown run, or the baseline itself.
    """
    from gem_eval.metrics.compare import EXIT_INCOMPARABLE, GateVerdict
    from gem_eval.metrics.compare import gate as decide

    started = time.perf_counter()
    base, new, base_frame, new_frame = two_runs(
        request.results_dir, request.baseline, request.new_run
    )
    played = {base["run_id"]: len(base_frame), new["run_id"]: len(new_frame)}
    incomplete = [run for run in (base, new) if not _complete(run, played[run["run_id"]])]
    if incomplete:
        verdict = GateVerdict(
            "incomparable",
            EXIT_INCOMPARABLE,
            [
                f"run {run['run_id']} is {run.get('status')}: "
                f"{_progress(run, frame)}: finish it (gem-eval run --resume)"
                for run, frame in ((base, base_frame), (new, new_frame))
                if run in incomplete
            ],
        )
    else:
        verdict = decide(
            base_frame,
            new_frame,
            max_drop=request.max_drop,
            alpha=request.alpha,
            max_infra_error_rate=request.max_infra_error_rate,
            same_suite_hash=base.get("suite_hash") == new.get("suite_hash"),
            allow_subset=request.allow_subset,
        )
    lines = _verdict_lines(verdict, base, new, request.allow_subset, complete=not incomplete)
    if request.junit is not None or request.summary is not None:
        from gem_eval.metrics.gate_report import append_markdown, gate_report, write_junit

        report = gate_report(
            verdict,
            base_frame,
            new_frame,
            base_run=base["run_id"],
            new_run=new["run_id"],
            suite=new.get("suite") or base.get("suite") or "",
            lines=lines,
            max_drop=request.max_drop,
            alpha=request.alpha,
            seconds=time.perf_counter() - started,
        )
        if request.junit is not None:
            write_junit(report, request.junit)
        if request.summary is not None:
            append_markdown(report, request.summary)
    return GateResult(verdict, base["run_id"], new["run_id"], tuple(lines))


def two_runs(
    results_dir: Path, base_run: str, new_run: str
) -> tuple[dict[str, Any], dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """The index rows and episode frames of two runs.

    Raises:
        UserError: No results directory, an unknown run, or the two are one run.
    """
    from gem_eval.store import open_results_index, resolve_run

    if not Path(results_dir).is_dir():
        raise UserError(f"no results directory {str(results_dir)!r}")
    with open_results_index(results_dir) as index:
        known = index.runs()
        base, new = resolve_run(known, base_run), resolve_run(known, new_run)
        if base["run_id"] == new["run_id"]:
            raise UserError(
                f"the run and its baseline are one run, {base['run_id']}: a run does not "
                "compare with itself"
            )
        base_frame = index.episodes_frame(run_ids=[base["run_id"]])
        new_frame = index.episodes_frame(run_ids=[new["run_id"]])
    return base, new, base_frame, new_frame


def _complete(run: dict[str, Any], played: int) -> bool:
    """A run that played every planned episode (a partial run is not comparable).

    Episodes lost to infrastructure errors count as played: the gate weighs them against
    ``max_infra_error_rate`` rather than refusing a run for one of them.
    """
    return run.get("status") == "finished" and played >= (run.get("episodes_planned") or 0)


def _progress(run: dict[str, Any], frame: pd.DataFrame) -> str:
    """How far a run got: its episodes scored of those planned, then those not scored by
    outcome and those not played (``0/2 episodes scored (2 cancelled)``)."""
    from collections import Counter

    from gem_eval.outcomes import is_scored

    outcomes = Counter(str(o) for o in frame["outcome"])
    scored = sum(n for outcome, n in outcomes.items() if is_scored(outcome))
    planned = int(run.get("episodes_planned") or 0)
    missing = [f"{n} {o}" for o, n in sorted(outcomes.items()) if not is_scored(o)]
    if planned > len(frame):
        missing.append(f"{planned - len(frame)} not played")
    return f"{scored}/{planned} episodes scored" + (f" ({', '.join(missing)})" if missing else "")


def _verdict_lines(
    verdict: GateVerdict,
    base: dict[str, Any],
    new: dict[str, Any],
    allow_subset: bool,
    complete: bool,
) -> list[str]:
    """What the gate prints: the verdict, then why, indented."""
    status = verdict.status.upper()
    lines = [f"gate {status}: {new['run_id']} against baseline {base['run_id']}"]
    lines += [f"  {reason}" for reason in verdict.reasons]
    if not complete:
        return lines
    if base.get("suite_hash") != new.get("suite_hash"):
        lines.append(
            f"  suite hash: baseline {base.get('suite_hash')}, new {new.get('suite_hash')}"
        )
    cmp = verdict.comparison
    if verdict.status == "incomparable" and cmp and cmp.new_lacks_base and not allow_subset:
        lines.append("  --allow-subset judges the part both runs played")
    return lines
