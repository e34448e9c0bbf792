"""Sandbox latency: warm ``exec`` vs the ``docker exec`` CLI, python tool calls, and
episodes/s with and without the warm pool.

Run: ``.venv/bin/python bench/sandbox_latency.py`` (needs Docker and the base image:
``gem-eval sandbox build-base``). Prints ratios measured in this one run; these
machines are noisy, so compare ratios, not absolute times.

* exec: median of N ``DockerSandbox.exec("true")`` in one warm container, against the
  median of N ``docker exec CONTAINER true`` (the CLI) on the same container.
* python: median latency of a tool call in a warm interpreter (``x = x + 1``).
* pool: 64 short episodes, each needing a fresh container (start, two python tool calls
  with 0.2 s of "model time" before each, remove), 1 and then 4 at a time; once starting
  each container on demand, once from a :class:`SandboxPool` that starts them ahead.
  Starting and removing a container costs Docker ~0.3 CPU-seconds: with many episodes
  at once on few cores, Docker's CPU, not start latency, bounds both.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

from gem_eval.sandbox.base import Sandbox
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.sandbox.pool import SandboxPool
from gem_eval.tools.python import PythonTool

N = 30
EPISODES = 64
CONCURRENCY = (1, 4)
MODEL_TIME_S = 0.2


class BenchError(Exception):
    """The episodes did not do the intended work: no figure is printed."""


async def exec_latency(sandbox: DockerSandbox) -> tuple[float, float]:
    sdk, cli = [], []
    for _ in range(N):  # interleaved, so both see the same machine load
        began = time.perf_counter()
        result = await sandbox.exec("true")
        sdk.append(time.perf_counter() - began)
        if not result.ok:
            raise BenchError(f"exec true in the container failed: {result}")
        began = time.perf_counter()
        await asyncio.to_thread(
            subprocess.run, ["docker", "exec", str(sandbox.id), "true"], check=True
        )
        cli.append(time.perf_counter() - began)
    return statistics.median(sdk), statistics.median(cli)


async def python_latency(sandbox: DockerSandbox) -> float:
    tool = PythonTool()
    await tool.call({"code": "x = 0"}, sandbox)  # starts the interpreter
    times = []
    for _ in range(N):
        began = time.perf_counter()
        result = await tool.call({"code": "x = x + 1"}, sandbox)
        times.append(time.perf_counter() - began)
        if result.is_error:
            raise BenchError(f"python tool call failed: {result.output}")
    final = await tool.call({"code": "print(x)"}, sandbox)
    await tool.aclose()
    if final.output.strip() != str(N):  # every call ran, in one live interpreter
        raise BenchError(f"after {N} increments the interpreter holds {final.output!r}")
    return statistics.median(times)


async def episode(sandbox: Sandbox) -> None:
    tool = PythonTool()
    for code in ("import math", "print(math.sqrt(2))"):
        await asyncio.sleep(MODEL_TIME_S)  # the model thinking
        result = await tool.call({"code": code}, sandbox)
        if result.is_error:
            raise BenchError(f"python tool call failed: {result.output}")
    await tool.aclose()
    if not result.output.startswith("1.41421356"):
        raise BenchError(f"the episode printed {result.output!r}, not sqrt(2)")


async def run_episodes(
    concurrency: int,
    acquire: Callable[[], Awaitable[Sandbox]],
    release: Callable[[Sandbox], Awaitable[None]],
) -> float:
    slots = asyncio.Semaphore(concurrency)
    played = 0

    async def one() -> None:
        nonlocal played
        async with slots:
            sandbox = await acquire()
            try:
                await episode(sandbox)
                played += 1
            finally:
                await release(sandbox)

    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(EPISODES)))
    wall = time.perf_counter() - began
    if played != EPISODES:
        raise BenchError(f"{played} of {EPISODES} episodes played")
    return wall


async def without_pool(concurrency: int) -> float:
    async def acquire() -> Sandbox:
        sandbox = DockerSandbox()
        await sandbox.start()
        return sandbox

    async def release(sandbox: Sandbox) -> None:
        await sandbox.close()

    return await run_episodes(concurrency, acquire, release)


async def with_pool(concurrency: int) -> float:
    pool = SandboxPool(DockerSandbox, warm=concurrency)
    try:
        return await run_episodes(concurrency, pool.acquire, pool.release)
    finally:
        await pool.aclose()


async def main() -> None:
    sandbox = DockerSandbox()
    await sandbox.start()
    try:
        sdk, cli = await exec_latency(sandbox)
        python = await python_latency(sandbox)
    finally:
        await sandbox.close()
    print(
        f"exec in a warm container: {sdk * 1000:6.1f} ms (SDK)  {cli * 1000:6.1f} ms "
        f"(docker exec CLI)  ratio cli/sdk = {cli / sdk:.2f}"
    )
    print(f"python tool call, warm interpreter: {python * 1000:.1f} ms")
    for concurrency in CONCURRENCY:
        bare = await without_pool(concurrency)
        pooled = await with_pool(concurrency)
        print(f"{EPISODES} episodes needing a fresh container, {concurrency} at a time:")
        print(f"  no pool : {bare:5.1f} s  {EPISODES / bare:5.2f} episodes/s")
        print(f"  pool    : {pooled:5.1f} s  {EPISODES / pooled:5.2f} episodes/s")
        print(f"  ratio pool/no-pool throughput = {bare / pooled:.2f}")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BenchError as exc:
        sys.exit(f"bench: no figures: {exc}")
