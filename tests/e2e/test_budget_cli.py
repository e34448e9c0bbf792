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
        r"stopped by --max-cost: \$([0-9.]+) spent of \$0.0001 \(\d+%\); (\d+) episodes",
        stopped.stdout,
    )
    assert match, stopped.stdout
    spent, left = float(match[1]), int(match[2])
    [run] = run_dirs(results)
    played = records(run)
    costs = [s["output"]["usage"]["cost_usd"] for r in played for s in r["trajectory"]["steps"]]  # type: ignore[index]
    assert spent == pytest.approx(sum(costs), abs=1e-6)
    assert spent - 0.0001 < max(costs)  # the overshoot: the one call in flight, at most
    # Near the cap the runner stops starting episodes that would not fit, rather than
    # starting one that the cap would cut mid-way.
    if not any(r["outcome"] == "cancelled" for r in played):
        assert "is expected to cost $" in stopped.stdout, stopped.stdout
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


def test_a_self_hosted_model_s_price_is_given_counted_and_capped(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = lambda body: Reply("\\boxed{3}")
    served = ["--model-base-url", openai_server.base_url, "--model-backend", "openai"]
    args = ["run", "--suite", "smoke", "--model", "hosted_vllm/ckpt", *served, "-q"]
    # No price: the cap cannot see the calls, and says so before the run.
    blind = gem_eval(*args, "--limit", "1", "--max-cost", "1", results=tmp_path / "blind")
    assert blind.returncode == 0, blind.stderr + blind.stdout
    assert (
        "warning: --max-cost counts priced calls only: model hosted_vllm/ckpt has no price "
        "(no litellm price for hosted_vllm/ckpt: self-hosted, counted as $0); give one "
        "with --price "
        "hosted_vllm/ckpt=IN,OUT (USD per million input/output tokens)"
    ) in " ".join(blind.stdout.split())

    # A price on the command line: each call charged at it, the cap holds, the manifest keeps it.
    price = ["--price", "hosted_vllm/ckpt=1000,2000", "--concurrency", "1"]
    dry = gem_eval(*args, *price, "--dry-run", results=tmp_path / "r")
    assert "your price: $1000/$2000 per million input/output tokens" in dry.stdout, dry.stdout
    capped = gem_eval(*args, *price, "--max-cost", "0.0001", results=tmp_path / "r")
    assert capped.returncode == 4, capped.stderr + capped.stdout
    assert "counts priced calls only" not in capped.stdout
    [run] = run_dirs(tmp_path / "r")
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["models"][0]["price"] == {"input": 1000.0, "output": 2000.0}
    steps = [s for r in records(run) for s in r["trajectory"]["steps"]]  # type: ignore[index]
    usages = [s["output"]["usage"] for s in steps]
    assert usages and all(
        u["cost_usd"] == pytest.approx((u["input_tokens"] * 1000 + u["output_tokens"] * 2000) / 1e6)
        for u in usages
    )

    # A resume may change the price (the calls still to come are charged at it).
    cheaper = ["--price", "hosted_vllm/ckpt=1,1", "--max-cost", "10", "-q"]
    more = gem_eval("run", "--resume", "latest", *cheaper, results=tmp_path / "r")
    assert more.returncode == 0, more.stderr + more.stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["models"][0]["price"] == {"input": 1.0, "output": 1.0}
    assert manifest["sessions"][-1]["changed"]["--price (hosted_vllm/ckpt)"] == {
        "input": 1.0,
        "output": 1.0,
    }

    # In a models file: `price:` as USD per million tokens, the same accounting.
    listed = tmp_path / "models.yaml"
    listed.write_text(
        "models:\n  - name: hosted_vllm/ckpt\n"
        f"    base_url: {openai_server.base_url}\n    backend: openai\n"
        "    price: {input: 1000, output: 2000}\n"
    )
    from_file = gem_eval(
        "run", "--suite", "smoke", "--models", str(listed), "--max-cost", "0.0001",
        "--concurrency", "1", "-q", results=tmp_path / "f",
    )  # fmt: skip
    assert from_file.returncode == 4, from_file.stderr + from_file.stdout
    [run] = run_dirs(tmp_path / "f")
    assert json.loads((run / "manifest.json").read_text())["models"][0]["price"]["input"] == 1000
    listed.write_text(listed.read_text().replace("output: 2000", "output: -2"))
    bad = gem_eval("run", "--suite", "smoke", "--models", str(listed), results=tmp_path / "g")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert f"{listed}:5: models[0].price.output" in bad.stderr
