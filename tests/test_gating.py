"""``gem_eval.gate``: the gate from Python, decided exactly as ``gem-eval gate`` decides
it, on runs that ``gem_eval.evaluate`` or the CLI stored."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import gem_eval
from gem_eval.errors import UserError
from tests.cli.invoke import gem_eval as cli
from tests.e2e.test_gate_cli import bernoulli, write_run


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    write_run(root, "base", bernoulli(0.8, 200, seed=1))
    write_run(root, "same", bernoulli(0.8, 200, seed=1), started_at=2000.0)
    write_run(root, "worse", bernoulli(0.4, 200, seed=2), started_at=3000.0)
    return root


@pytest.mark.parametrize(("new", "status", "code"), [("same", "pass", 0), ("worse", "fail", 1)])
def test_the_verdict_and_lines_are_the_cli_s(
    results: Path, new: str, status: str, code: int
) -> None:
    result = gem_eval.gate(new, "base", results_dir=results)
    assert (result.status, result.exit_code, result.passed) == (status, code, code == 0)
    assert (result.new_run, result.base_run) == (new, "base")
    shown = cli("gate", new, "--baseline", "base", "--results-dir", str(results))
    assert shown.code == code
    assert shown.stdout.splitlines() == list(result.lines)


def test_latest_and_the_reports_asked_for(results: Path, tmp_path: Path) -> None:
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    result = gem_eval.gate("latest", "base", results_dir=results, junit=junit, summary=summary)
    assert (result.new_run, result.status) == ("worse", "fail")
    suite = ET.parse(junit).getroot()
    assert int(suite.get("failures") or 0) >= 1
    assert "FAIL" in summary.read_text()


def test_runs_that_do_not_compare(results: Path) -> None:
    write_run(results, "other", bernoulli(0.8, 200, seed=1), suite_hash="h2", started_at=4000.0)
    result = gem_eval.gate("other", "base", results_dir=results)
    assert (result.status, result.exit_code, result.passed) == ("incomparable", 3, False)
    assert "  suite hash: baseline h1, new h2" in result.lines


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_drop": 1.5}, "max_drop must lie in \\[0, 1\\], got 1.5"),
        ({"alpha": 0.7}, "alpha must lie in"),
        ({"max_infra_error_rate": -1}, "max_infra_error_rate must lie in"),
        ({"junit": "/no/such/dir/gate.xml"}, "junit /no/such/dir/gate.xml: no directory"),
    ],
)
def test_bad_settings_are_user_errors_named_as_given(
    results: Path, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        gem_eval.gate("same", "base", results_dir=results, **kwargs)  # type: ignore[arg-type]


def test_unknown_runs_and_the_baseline_itself(results: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no run .sme.\. Did you mean"):
        gem_eval.gate("sme", "base", results_dir=results)
    with pytest.raises(UserError, match="one run, base"):
        gem_eval.gate("base", "base", results_dir=results)
    with pytest.raises(UserError, match="no results directory"):
        gem_eval.gate("same", "base", results_dir=tmp_path / "none")


def test_evaluate_then_gate(tmp_path: Path) -> None:
    """A checkpoint gated against a baseline that evaluate() stored, from Python alone."""
    results = tmp_path / "results"
    baseline = gem_eval.evaluate("smoke", models=["oracle"], results_dir=results)
    checkpoint = gem_eval.evaluate("smoke", models=["oracle"], results_dir=results)
    verdict = gem_eval.gate(checkpoint.run_id, baseline.run_id, results_dir=results)
    assert verdict.passed and verdict.lines[0] == (
        f"gate PASS: {checkpoint.run_id} against baseline {baseline.run_id}"
    )
    # A run cut short is not judged: it must be finished first.
    partial = gem_eval.evaluate("smoke", models=["noop"], results_dir=results, limit=1)
    verdict = gem_eval.gate(partial.run_id, baseline.run_id, results_dir=results)
    assert verdict.status == "incomparable"
