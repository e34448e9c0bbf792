"""The harness-overhead ratios with the whole run path: suite, runner, store, progress.

Same workload as ``bench/harness_overhead.py`` (N episodes x 5 calls, 64 calls in flight,
against the fake server in its own process), but driven the way ``gem-eval run`` drives
it: a suite file is loaded and expanded, the runner schedules the episodes, every record
(with its full trajectory) is appended to ``episodes.jsonl`` with fsync and indexed in
SQLite, and the plain progress display is fed.

Run: ``.venv/bin/python bench/run_overhead.py [--episodes 400] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness_overhead import (
    CALLS_PER_EPISODE,
    CONCURRENCY,
    FakeServer,
    PythonStub,
    bare_client_run,
)

from gem_eval.cli.progress import PlainProgress
from gem_eval.records import ModelSpec
from gem_eval.runner import LocalExecutor
from gem_eval.runner.session import (
    RunOptions,
    default_model_factory,
    execute_run,
    plan_run,
)

SUITE = """\
name: overhead
description: One answer after four tool calls; the episode ends on the answer.
defaults:
  samples: {n}
  tools: [python]
  limits: {{max_turns: 10}}
tasks:
  - env: game:GuessTheNumber-v0
    id: one
    args: {{min_number: 1, max_number: 1, max_turns: 1}}
"""


def run_once(base_url: str, backend: str, episodes: int) -> tuple[float, int]:
    """One whole run; returns wall seconds and the number of episodes recorded."""
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "overhead.yaml"
        suite.write_text(SUITE.format(n=episodes))
        model = ModelSpec(name="openai/fake", base_url=base_url, backend=backend)
        options = RunOptions(concurrency=episodes)  # episodes wait on the model's limit
        start = time.perf_counter()
        plan = plan_run(str(suite), [model], options, Path(tmp) / "results")

        def factory(spec: ModelSpec) -> object:
            built = default_model_factory(spec)
            built.limit.limit = built.limit.maximum = CONCURRENCY  # type: ignore[attr-defined]
            return built

        executor = LocalExecutor(factory, tools={"python": PythonStub})
        progress = PlainProgress(every=100, stream=io.StringIO())
        progress.start(dict(plan.totals), dict(plan.done))
        summary = asyncio.run(execute_run(plan, executor=executor, sinks=[progress]))
        wall = time.perf_counter() - start
        recorded = sum(1 for _ in plan.run_dir.records())
        if summary.exit_code != 0 or recorded != episodes:
            raise RuntimeError(f"run went wrong: {summary}, {recorded} records")
        return wall, recorded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="skip the latency-bound regime")
    args = parser.parse_args()
    n = args.episodes
    print(f"gem-eval run path: {n} episodes x {CALLS_PER_EPISODE} calls, {CONCURRENCY} in flight")
    if not args.quick:
        server = FakeServer(latency=1.0)
        try:
            ideal = n * CALLS_PER_EPISODE * 1.0 / CONCURRENCY
            for backend in ("openai", "litellm"):
                wall, _ = run_once(server.base_url, backend, n)
                print(f"[latency-bound, {backend}] wall {wall:.2f} s, ideal {ideal:.2f} s")
                print(f"ratio_latency_bound[{backend}]={wall / ideal:.2f}")
        finally:
            server.close()
    server = FakeServer(latency=0.1)
    try:
        bare = asyncio.run(bare_client_run(server.base_url, n))
        print(f"[cpu-bound] bare openai.AsyncOpenAI loop: {bare:.2f} s")
        for backend in ("openai", "litellm"):
            wall, _ = run_once(server.base_url, backend, n)
            print(f"[cpu-bound, {backend}] wall {wall:.2f} s")
            print(f"ratio_vs_bare_client[{backend}]={wall / bare:.2f}")
    finally:
        server.close()


if __name__ == "__main__":
    main()
