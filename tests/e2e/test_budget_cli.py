"""``--max-cost``: a budget that holds, says why it stopped, and resumes with more."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply


def test_a_spent_budget_stops_new_calls_says_so_and_resumes(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = lambda body: Reply("\\boxed{3}")  # never right: every turn used
    results = tmp_path / "r"
    # A model litellm prices, served by the fixture server; one call in flight at a time.
    args = ["run", "--suite", "smoke", "--model", "openai/gpt-4o-mini", "-q"]
    args += ["--model-base-url", openai_server.base_url, "--concurrency", "1"]
    stopped = gem_eval(*args, "--max-cost", "0.0001", results=results)
    assert stopped.returncode == 4, stopped.stderr + stopped.stdout
    match = re.search(
        r"stopped by --max-cost: \$([0-9.]+) spent of \$0.0001; (\d+) episodes", stopped.stdout
    )
    assert match, stopped.stdout
    spent, left = float(match[1]), int(match[2])
    [run] = run_dirs(results)
    played = records(run)
    costs = [s["output"]["usage"]["cost_usd"] for r in played for s in r["trajectory"]["steps"]]  # type: ignore[index]
    assert spent == pytest.approx(sum(costs), abs=1e-6) and spent > 0.0001
    assert spent - 0.0001 < max(costs)  # the overshoot: the one call in flight, at most
    assert left == 4 - sum(r["outcome"] != "cancelled" for r in played) > 0
    assert f"--resume {run.name} --max-cost MORE" in stopped.stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "budget_exhausted"

    more = gem_eval("run", "--resume", "latest", "--max-cost", "10", "-q", results=results)
    assert more.returncode == 0, more.stderr + more.stdout
    latest = {r["key"]: r for r in records(run)}
    assert len(latest) == 4 and all(r["outcome"] != "cancelled" for r in latest.values())


def test_a_resumed_dry_run_estimates_at_the_run_s_own_concurrency(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = lambda body: Reply("\\boxed{3}")
    results = tmp_path / "r"
    args = ["run", "--suite", "smoke", "--model", "openai/fake", "--concurrency", "3"]
    args += ["--model-base-url", openai_server.base_url, "--max-cost", "0", "-q"]
    first = gem_eval(*args, results=results)
    assert first.returncode == 4, first.stderr + first.stdout  # nothing played: all left
    dry = gem_eval("run", "--resume", "latest", "--dry-run", results=results)
    assert dry.returncode == 0, dry.stderr + dry.stdout
    assert "4 episodes at concurrency 3" in dry.stdout
