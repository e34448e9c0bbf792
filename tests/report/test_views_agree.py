"""The report page and ``gem-eval view`` say what the CLI says: the same baseline and gate
verdict, the same p-value; ``results show`` the same cost as the leaderboard and the seed
the episodes played."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gem_eval.cli.results import results_app
from gem_eval.report.server import ResultsServer
from tests.report.recorded import gem_eval
from tests.report.written import BASE_SEED, TwoRuns, write_two_runs


@pytest.fixture
def runs(tmp_path: Path) -> TwoRuns:
    results = tmp_path / "results"
    results.mkdir()
    return write_two_runs(results)


@pytest.fixture
def server(runs: TwoRuns) -> Iterator[ResultsServer]:
    server = ResultsServer(runs.results)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def get(server: ResultsServer, path: str) -> str:
    with urllib.request.urlopen(server.url + path.lstrip("/"), timeout=60) as reply:
        return str(reply.read().decode())


def page_data(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="gem-data">(.*?)</script>', page, re.S)
    assert match
    data = json.loads(match.group(1))
    assert isinstance(data, dict)
    return data


def test_view_compares_the_newer_run_against_the_older(
    runs: TwoRuns, server: ResultsServer
) -> None:
    # The run list shows the newest first: ticking both submits the newer run first.
    page = get(server, f"/report?run={runs.new}&run={runs.old}")
    assert f"<h1>gem-eval report: {runs.new} against baseline {runs.old}</h1>" in page
    data = page_data(page)
    assert (data["gate"]["base"], data["gate"]["new"]) == (runs.old, runs.new)
    assert data["gate"]["status"] == "fail"
    assert [(r["run_id"], r["role"]) for r in data["runs"]] == [
        (runs.old, "baseline"),
        (runs.new, "new"),
    ]
    # what the CLI says of the same two runs
    report = runs.results.parent / "report.html"
    done = gem_eval("report", runs.old, runs.new, "-o", str(report), results=runs.results)
    assert done.returncode == 0, done.stderr
    assert page_data(report.read_text())["gate"] == data["gate"]
    gate = gem_eval("gate", runs.new, "--baseline", runs.old, results=runs.results)
    assert gate.returncode == 1 and "gate FAIL" in gate.stdout


def test_view_takes_the_baseline_the_user_chooses(runs: TwoRuns, server: ResultsServer) -> None:
    listing = get(server, "/")
    assert f'<input type="radio" name="base" value="{runs.new}"' in listing
    data = page_data(get(server, f"/report?run={runs.old}&run={runs.new}&base={runs.new}"))
    assert (data["gate"]["base"], data["gate"]["new"]) == (runs.new, runs.old)
    assert data["gate"]["status"] == "pass"
    assert data["runs"][0]["role"] == "baseline" and data["runs"][0]["run_id"] == runs.new


def test_report_prints_the_p_value_as_compare_does(runs: TwoRuns, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = gem_eval("report", runs.old, runs.new, "-o", str(out), results=runs.results)
    assert done.returncode == 0, done.stderr
    compared = gem_eval("compare", runs.old, runs.new, results=runs.results)
    assert compared.returncode == 0, compared.stderr
    cli_p = re.search(r"McNemar \(\w+\) p=(\S+):", compared.stdout)
    assert cli_p and "e-" in cli_p.group(1)  # 30 samples flipped: a tiny p
    assert f"p={cli_p.group(1)}:" in out.read_text()


def test_results_show_prints_the_seed_played_and_an_unknown_cost_as_a_dash(
    runs: TwoRuns,
) -> None:
    shown = CliRunner().invoke(
        results_app, ["show", runs.old, "--results-dir", str(runs.results)],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    seed = re.search(r"^seed\s+(.*)$", shown.output, re.M)
    assert seed and seed.group(1).startswith(f"{BASE_SEED} "), shown.output
    usage = re.search(r"^usage\s+(.*)$", shown.output, re.M)
    assert usage and usage.group(1).strip().endswith("tokens, cost -"), shown.output
    board = gem_eval("leaderboard", runs.old, "-f", "md", results=runs.results)
    header, _, row = board.stdout.splitlines()[:3]
    cells = dict(zip(header.split("|"), row.split("|")))
    assert cells[" cost_usd "].strip() == "-"
