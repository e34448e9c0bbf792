"""An imported run says who played it: the source harness's version and where its code
came from, not the gem-eval (and host) that imported it."""

from __future__ import annotations

import json
import platform
import re
from pathlib import Path

from typer.testing import CliRunner

from gem_eval.cli.results import results_app
from gem_eval.store.importers import import_results
from tests.store.test_import import load, write_inspect_json, write_lm_eval

ORIGIN = "https://github.com/example/evals.git"


def show(results: Path, run_id: str) -> str:
    shown = CliRunner().invoke(
        results_app, ["show", run_id, "--results-dir", str(results)], env={"COLUMNS": "250"}
    )
    assert shown.exit_code == 0, shown.output
    return shown.output


def row(output: str, name: str) -> str:
    match = re.search(rf"^{re.escape(name)}\s+(.*)$", output, re.M)
    assert match, output
    return match.group(1).strip()


def test_an_imported_inspect_run_shows_inspect_ai_and_its_origin(tmp_path: Path) -> None:
    log = write_inspect_json(tmp_path / "a.json")
    body = json.loads(log.read_text())
    body["eval"]["revision"] = {"type": "git", "origin": ORIGIN, "commit": "9f3e2d1"}
    log.write_text(json.dumps(body))
    results = tmp_path / "results"
    [run_id] = import_results(log, results)
    manifest, _ = load(results, run_id)
    imported = manifest.extra["imported"]
    assert imported["version"] == "0.3.150"  # eval.packages, not the log format's 2
    assert imported["log_version"] == 2
    assert (imported["origin"], imported["commit"]) == (ORIGIN, "9f3e2d1")
    output = show(results, run_id)
    assert row(output, "inspect_ai") == f"0.3.150 (commit 9f3e2d1) on {ORIGIN}"
    assert row(output, "imported").startswith("by gem-eval ")
    assert not re.search(r"^gem-eval\s", output, re.M)  # the importer is not the player
    assert platform.node() not in row(output, "inspect_ai")


def test_an_inspect_log_without_a_revision_names_no_origin(tmp_path: Path) -> None:
    results = tmp_path / "results"
    [run_id] = import_results(write_inspect_json(tmp_path / "a.json"), results)
    assert row(show(results, run_id), "inspect_ai") == "0.3.150"


def test_an_imported_lm_eval_run_shows_lm_eval_and_its_commit(tmp_path: Path) -> None:
    results = tmp_path / "results"
    [run_id] = import_results(write_lm_eval(tmp_path / "out", "org/m", [True, False]), results)
    assert row(show(results, run_id), "lm-eval") == "0.4.9 (commit abc1234)"
