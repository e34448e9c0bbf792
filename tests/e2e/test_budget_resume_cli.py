"""``--resume`` of episodes a ``--max-cost`` cut mid-way: the calls already paid for are
replayed from the cut records, so that the model server sees each call exactly once and
the run costs what the server was paid for."""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from gem_eval.records import EpisodeRecord
from gem_eval.store import RunDir
from tests.conftest import IN_CI
from tests.e2e.test_run_cli import gem_eval, run_dirs, start_gem_eval, wait_for_records
from tests.fixtures.openai_server import FakeOpenAIServer, Reply

# Every guess is illegal (out of range): each episode plays its five turns, and a seeded
# env asks the same questions when an episode is played again.
SUITE = """\
name: wrong-guesses
defaults: {samples: 40, limits: {max_turns: 10}}
tasks:
  - env: game:GuessTheNumber-v0
    id: guess
    args: {min_number: 1, max_number: 1000, max_turns: 5}
"""
PRICE = (10.0, 100.0)  # USD per million input / output tokens
PROMPT_TOKENS = 10


def _cost(completion_tokens: int) -> float:
    return (PROMPT_TOKENS * PRICE[0] + completion_tokens * PRICE[1]) / 1e6


@pytest.mark.slow
@pytest.mark.parametrize(
    "executor", ["local", pytest.param("ray", marks=pytest.mark.ray)], ids=["local", "ray"]
)
def test_a_cut_episode_resumes_from_the_calls_it_paid_for(
    openai_server: FakeOpenAIServer, tmp_path: Path, executor: str
) -> None:
    """The run is cut on this machine; its resume plays here or on a one-node Ray cluster
    (the replies travel with the episodes, and the run is counted from the records)."""
    if executor == "ray" and importlib.util.find_spec("ray") is None:
        if IN_CI:
            pytest.fail("CI=true, but ray is not installed: pip install 'gem-eval[ray]'")
        pytest.skip("ray is not installed: pip install 'gem-eval[ray]'")
    answered: list[float] = []  # what the server answered, priced, call by call

    def handler(body: dict[str, Any]) -> Reply:
        # The first episode plays alone (the budget's probe) and is cheap: the episodes
        # admitted after it cost more than it did, so the cap cuts them mid-way.
        tokens = 1 if len(answered) < 5 else 5
        answered.append(_cost(tokens))
        usage = {
            "prompt_tokens": PROMPT_TOKENS,
            "completion_tokens": tokens,
            "total_tokens": PROMPT_TOKENS + tokens,
        }
        return Reply("\\boxed{1001}", usage=usage)

    openai_server.handler = handler
    results = tmp_path / "r"
    args = _run_args(openai_server, tmp_path, concurrency=64)

    capped = gem_eval(*args, "--max-cost", "0.01", results=results)
    assert capped.returncode == 4, capped.stderr + capped.stdout
    [run] = run_dirs(results)
    first = _records(run)
    outcomes = [r.outcome for r in first]
    assert "completed" in outcomes, outcomes  # the budget let some episodes finish
    assert any(r.outcome == "cancelled" and r.turns for r in first)  # cut mid-way

    # The estimate of the resume leaves out the calls it will replay.
    if executor == "local":
        estimate = gem_eval("run", "--resume", "latest", "--dry-run", results=results)
        assert estimate.returncode == 0, estimate.stderr
        replayed = re.search(r"less (\d+) calls \(\$([0-9.]+)\) already paid", estimate.stdout)
        assert replayed, estimate.stdout
        cut = [r for r in first if r.outcome == "cancelled"]
        assert int(replayed[1]) == sum(r.turns for r in cut) > 0
        assert float(replayed[2]) == pytest.approx(sum(r.spent_usd for r in cut), abs=1e-6)

    # Resumed with a little more: stopped again, having counted what the server was paid.
    resume = ["run", "--resume", "latest", "--executor", executor, "-q"]
    ray_env = {"RAY_USAGE_STATS_ENABLED": "0"}
    again = gem_eval(*resume, "--max-cost", "0.02", results=results, env=ray_env)
    assert again.returncode == 4, again.stderr + again.stdout
    spent = re.search(r"stopped by --max-cost: \$([0-9.]+) spent of \$0.02", again.stdout)
    assert spent, again.stdout
    assert float(spent[1]) == pytest.approx(sum(answered), abs=1e-6)
    assert "model calls replayed from their records" in " ".join(again.stdout.split())

    more = gem_eval(*resume, "--max-cost", "10", results=results, env=ray_env)
    assert more.returncode == 0, more.stderr + more.stdout
    every = _records(run)
    latest = {r.key: r for r in every}
    assert len(latest) == 40 and {r.outcome for r in latest.values()} == {"completed"}

    # Each call reached the server once: every record holds the calls made when it was
    # played and replays those its cut predecessors made; the final ones hold every call.
    assert openai_server.stats()["requests"] == len(answered) == 5 * 40
    assert sum(r.turns for r in latest.values()) == len(answered)
    assert sum(r.turns - r.replayed_calls for r in every) == len(answered)
    paid: dict[str, int] = {}  # the most calls an attempt of the episode had made
    for record in every:
        assert record.trajectory is not None
        flags = [s.output.replayed for s in record.trajectory.steps]
        replayed = record.replayed_calls
        assert flags == [True] * replayed + [False] * (len(flags) - replayed)
        if record.outcome == "completed":  # it replayed every call paid for before
            assert replayed == paid.get(record.key, 0)
        paid[record.key] = max(paid.get(record.key, 0), len(flags))
    assert any(r.replayed_calls for r in latest.values())

    # The run cost what the server was paid: every record's calls made when it was
    # played (the cut ones too), none counted twice; each final record keeps its whole
    # episode's cost.
    total = sum(answered)
    assert sum(r.spent_usd for r in every) == pytest.approx(total)
    assert sum(r.total_cost_usd for r in latest.values()) == pytest.approx(total)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "finished"
    assert ("ray" in manifest["resources"]) == (executor == "ray")  # where the resume played


def _run_args(server: FakeOpenAIServer, tmp_path: Path, concurrency: int) -> list[str]:
    """``gem-eval run``'s arguments: the suite against ``server``, priced."""
    suite = tmp_path / "guess.yaml"
    suite.write_text(SUITE)
    served = ["--model-base-url", server.base_url, "--model-backend", "openai"]
    price = f"hosted_vllm/ckpt={PRICE[0]:g},{PRICE[1]:g}"
    args = ["run", "--suite", str(suite), "--model", "hosted_vllm/ckpt", *served]
    return [*args, "--price", price, "--concurrency", str(concurrency), "-q"]


def _records(run: Path) -> list[EpisodeRecord]:
    return list(RunDir(run).records())


@pytest.mark.slow
def test_an_episode_stopped_by_ctrl_c_resumes_from_the_calls_it_paid_for(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Ctrl-C mid-run: the episodes in flight are recorded ``cancelled`` with the calls
    they made (counted in the run's cost), and ``--resume`` replays those calls: the
    server sees each call once across the run and its resume."""
    answered: list[float] = []

    def handler(body: dict[str, Any]) -> Reply:
        answered.append(_cost(1))
        usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": 1, "total_tokens": 11}
        return Reply("\\boxed{1001}", usage=usage)

    openai_server.handler = handler
    openai_server.latency = 0.1
    results = tmp_path / "r"
    proc = start_gem_eval(_run_args(openai_server, tmp_path, concurrency=8), results)
    # The first 8 episodes end together (0.5 s of calls each); the next 8 are stopped
    # mid-way through their five calls.
    wait_for_records(results, 8)
    time.sleep(0.25)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    [run] = run_dirs(results)
    first = _records(run)
    kept = [r for r in first if r.outcome == "cancelled" and r.turns]
    # Stopped mid-way, with the calls made so far.
    assert kept, [(r.outcome, r.turns) for r in first if r.outcome != "completed"]
    assert all(r.cost_usd and r.spent_usd == pytest.approx(r.turns * _cost(1)) for r in kept)

    resumed = gem_eval("run", "--resume", "latest", "-q", results=results)
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    every = _records(run)
    latest = {r.key: r for r in every}
    assert len(latest) == 40 and {r.outcome for r in latest.values()} == {"completed"}
    # Each call was answered once (the calls in flight at Ctrl-C were cut before their
    # answer: asked again, not paid twice); the resumed episodes replayed what they paid.
    assert len(answered) == 5 * 40
    assert 0 <= openai_server.stats()["requests"] - len(answered) <= 8
    assert sum(latest[r.key].replayed_calls for r in kept) >= sum(r.turns for r in kept)
    assert sum(r.spent_usd for r in every) == pytest.approx(sum(answered))
