"""Harness overhead: gem-eval's agent loop against the fake server, and a bare client.

N episodes x 5 model calls (4 tool calls, then the answer) with at most 64 model calls
in flight (episodes are not limited: they wait on the model's connection limit), against
the fake OpenAI-compatible server (tests/fixtures/openai_server.py) in its own process:

* latency-bound (1.0 s per call): ``ratio_latency_bound`` = wall / ideal, where
  ideal = N * 5 * latency / concurrency.
* CPU-bound (0.1 s per call): ``ratio_vs_bare_client`` = gem-eval's wall time / that of
  a bare ``openai.AsyncOpenAI`` loop making the same calls at the same concurrency.

Both backends (litellm, and the direct openai client) are measured in the same run.
Also printed: CPU milliseconds per model call, and peak RSS per 1,000 episodes kept.

Run: ``.venv/bin/python bench/harness_overhead.py [--episodes 400] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from gem_eval import make  # noqa: E402
from gem_eval.agent import Limits, run_episode  # noqa: E402
from gem_eval.agent.trajectory import Trajectory  # noqa: E402
from gem_eval.models import RetryPolicy, get_model  # noqa: E402
from gem_eval.tools import Tool, ToolResult  # noqa: E402

CONCURRENCY = 64
CALLS_PER_EPISODE = 5


class PythonStub(Tool):
    """Stands in for the python tool: the benchmark measures the harness, not a sandbox."""

    name = "python"
    description = "Run Python code."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"code": {"type": "string"}},
        "required": ["code"],
    }

    async def call(self, args: dict[str, Any]) -> ToolResult:
        return ToolResult(output="1")


class FakeServer:
    """The fake server in a child process, so its CPU is not ours."""

    def __init__(self, latency: float) -> None:
        cmd = [sys.executable, "-m", "tests.fixtures.openai_server", "--port", "0"]
        cmd += ["--latency", str(latency), "--scenario", "tool_loop", "--tool-calls", "4"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "READY":
            raise RuntimeError(f"the fake server did not start: {line}")
        self.base_url = line[1]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


async def gem_eval_run(
    base_url: str, backend: str, episodes: int
) -> tuple[float, float, list[Trajectory]]:
    """400 episodes through run_episode; returns wall s, CPU s, the trajectories."""
    retry = RetryPolicy(max_retries=2, timeout_s=60.0)
    model = get_model(
        "openai/fake",
        base_url=base_url,
        backend=backend,
        retry=retry,
        concurrency=CONCURRENCY,
        max_concurrency=CONCURRENCY,
    )
    tools = [PythonStub()]

    async def one(seed: int) -> Trajectory:
        env = make("game:GuessTheNumber-v0", min_number=1, max_number=1, max_turns=1)
        return await run_episode(env, model, tools, Limits(max_turns=10), seed=seed)

    async with model:
        await one(-1)  # warm-up: imports, connection pool
        wall, cpu = time.perf_counter(), time.process_time()
        trajectories = await asyncio.gather(*(one(i) for i in range(episodes)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    bad = [t for t in trajectories if not t.success or len(t.steps) != CALLS_PER_EPISODE]
    if bad:
        raise RuntimeError(f"{len(bad)} episodes went wrong, e.g. {bad[0].outcome}: {bad[0].error}")
    return wall, cpu, list(trajectories)


async def bare_client_run(base_url: str, episodes: int) -> float:
    """The same calls with nothing but openai.AsyncOpenAI; returns wall seconds."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    tools = [PythonStub().schema()]
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one() -> None:
        messages: list[Any] = [{"role": "user", "content": "Guess a number."}]
        for _ in range(CALLS_PER_EPISODE):
            async with slots:  # 64 calls in flight, as the model's limit allows gem-eval
                reply = await client.chat.completions.create(
                    model="fake",
                    messages=messages,
                    tools=tools,  # type: ignore[arg-type]
                )
            message = reply.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            call = message.tool_calls[0]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "1"})

    await one()
    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(episodes)))
    wall = time.perf_counter() - start
    await client.close()
    return wall


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="skip the latency-bound regime")
    args = parser.parse_args()
    n = args.episodes
    calls = n * CALLS_PER_EPISODE
    print(f"{n} episodes x {CALLS_PER_EPISODE} calls, concurrency {CONCURRENCY}")

    if not args.quick:
        server = FakeServer(latency=1.0)
        try:
            ideal = calls * 1.0 / CONCURRENCY
            for backend in ("openai", "litellm"):
                wall, _, _ = asyncio.run(gem_eval_run(server.base_url, backend, n))
                print(f"[latency-bound, {backend}] wall {wall:.2f} s, ideal {ideal:.2f} s")
                print(f"ratio_latency_bound[{backend}]={wall / ideal:.2f}")
        finally:
            server.close()

    server = FakeServer(latency=0.1)
    try:
        bare = asyncio.run(bare_client_run(server.base_url, n))
        print(f"[cpu-bound] bare openai.AsyncOpenAI loop: {bare:.2f} s")
        for backend in ("openai", "litellm"):
            rss_before = peak_rss_mb()
            wall, cpu, trajectories = asyncio.run(gem_eval_run(server.base_url, backend, n))
            kept = len(json.dumps([t.model_dump(mode="json") for t in trajectories]))
            print(
                f"[cpu-bound, {backend}] wall {wall:.2f} s, "
                f"CPU {cpu / calls * 1000:.2f} ms per model call, "
                f"records {kept / n / 1024:.1f} KiB per episode"
            )
            print(f"ratio_vs_bare_client[{backend}]={wall / bare:.2f}")
            grown = max(peak_rss_mb() - rss_before, 0.0)
            print(
                f"peak RSS {peak_rss_mb():.0f} MB; grew {grown:.1f} MB for {n} episodes kept "
                f"(~{grown / n * 1000:.0f} MB per 1,000)"
            )
    finally:
        server.close()


if __name__ == "__main__":
    main()
