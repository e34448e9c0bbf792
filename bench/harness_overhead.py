"""Harness overhead on the path a user takes: ``gem-eval run`` on a suite, against a bare client.

Workload: N episodes (default 400) of 5 model calls each, 4 ``search`` tool calls (a real
BM25 search over ``tasks/data/search/corpus.jsonl``: no sandbox), then the answer, against
the fake OpenAI-compatible server (``tests/fixtures/openai_server.py --scenario tool_loop
--tool-calls 4``) in its own process. 64 model calls are in flight at a time.

* gem-eval: the installed CLI in a subprocess, ``gem-eval run --suite SUITE.yaml --model
  openai/fake --model-base-url URL [--model-backend B] --concurrency N --max-connections
  64 --quiet`` on a suite written to a temporary directory, with its runner, results store
  (fsynced JSONL, SQLite index), progress and default retries and timeouts. Every episode
  is admitted at once and their calls queue on the model's connection limit of 64: that
  is the schedule the ideal below assumes. (With ``--concurrency 64``, 64 episodes at a
  time, 400 episodes run in 7 waves of 5 calls: 35 s at 1 s a call, 1.12x the ideal by
  arithmetic alone.)
* bare client: this script in a subprocess (``--bare``), ``openai.AsyncOpenAI`` with no
  retries, the same messages (growing the same way), the same tool (gem-eval's
  ``SearchTool`` over the same index, so the tool work is the same), every episode
  started at once and 64 calls in flight (a semaphore around each call).

Figures, from one invocation, each a ratio of wall times:

* ``ratio_latency_bound[B]=``: the whole ``gem-eval run`` command at 1.0 s a call over the
  ideal, N * 5 * 1.0 / 64 s. (Each connection makes its calls one after another, so no
  schedule beats ceil(N * 5 / 64) s: 32 s, 1.024x the ideal, for 400 episodes.)
* ``ratio_vs_bare_client[B]=``: the whole ``gem-eval run`` command at 0.1 s a call over the
  whole bare-client command (both include their Python start-up and imports: gem-eval's
  is larger, and a user waits for it).
* ``..._excl_startup``: the same ratios over each side's own playing window instead: for
  gem-eval, from the first episode's ``started_at`` to the last one's ``finished_at``
  (read from ``episodes.jsonl``); for the bare client, from its first call to its last
  reply (timed in its process). Imports made lazily during the first calls stay in.

Also printed: CPU milliseconds per model call and peak RSS of each command's process
(``os.wait4`` of that child: the process, not this one), and ``cpu_ratio_vs_bare_client``:
the two whole commands' CPU seconds (start-up included), which other load on a shared
machine skews less than wall time.

Before printing any figure the bench checks that the work was done: the command exited 0;
N records, each ``completed`` and successful with score 1, 5 turns, no retries, 4
``search`` tool events whose output is the expected search result; the bare client
played N episodes of 5 calls and its tool outputs are that result too. Otherwise it stops
with the reason and prints no figure.

The backends: ``default`` (no ``--model-backend``: the client a user gets without asking,
checked in the manifest to be the direct one), ``openai`` and ``litellm``.

Run: ``.venv/bin/python bench/harness_overhead.py [--episodes 400] [--backend default]
[--quick] [--repeats 1]`` (``--quick``: the 0.1 s regime only; ``--repeats R``: each
side R times, alternating, and each measure's best counts).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gem_eval.records import EpisodeRecord

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tasks" / "data" / "search" / "corpus.jsonl"
IN_FLIGHT = 64
TOOL_CALLS = 4
CALLS_PER_EPISODE = TOOL_CALLS + 1
QUERY = "Who kept the Verran Lighthouse on Skerry Point?"
ENV_ID = "game:GuessTheNumber-v0"
ENV_ARGS = {"min_number": 1, "max_number": 1, "max_turns": 1}
ANSWER = "\\boxed{1}"
SUITE = """\
name: overhead
description: Four searches, then the answer; the episode ends on the answer.
defaults:
  samples: {episodes}
  tools:
    - {{name: search, corpus: {corpus}, k: 3}}
  limits: {{max_turns: 10}}
tasks:
  - env: {env_id}
    id: one
    args: {env_args}
"""


class BenchError(Exception):
    """The episodes did not do the intended work: no figure is printed."""


@dataclass(frozen=True)
class Command:
    """A finished subprocess: wall time, its own CPU and peak RSS, its output."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    stdout: str


@dataclass(frozen=True)
class Played:
    """A side's measurements: the whole command, and its own playing window."""

    command: Command
    window_s: float


def run_command(cmd: list[str], cwd: Path) -> Command:
    """Run ``cmd``; its wall time, and its CPU and peak RSS from ``os.wait4`` of the child."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        tail = "\n".join((stdout + stderr).splitlines()[-15:])
        raise BenchError(f"{cmd[0]} exited {proc.returncode}:\n{tail}")
    return Command(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout)


class FakeServer:
    """The fixture server in its own process, so its CPU is not the client's."""

    def __init__(self, latency: float) -> None:
        cmd = [sys.executable, "-m", "tests.fixtures.openai_server", "--port", "0"]
        cmd += ["--latency", str(latency), "--scenario", "tool_loop"]
        cmd += ["--tool-calls", str(TOOL_CALLS), "--tool-name", "search"]
        cmd += ["--tool-arguments", json.dumps({"query": QUERY}), "--answer", ANSWER]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split() if self.proc.stdout else []
        if len(line) != 2 or line[0] != "READY":
            self.close()
            raise BenchError(f"the fake server did not start: {line}")
        self.base_url = line[1]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def expected_tool_output() -> str:
    """What each search returns (this also builds the index in the cache, untimed)."""
    from gem_eval.tools.search import BM25Backend, SearchTool

    result = asyncio.run(SearchTool(BM25Backend(CORPUS)).call({"query": QUERY}))
    if result.is_error or not result.output.startswith("[1] "):
        raise BenchError(f"the search tool does not find the corpus: {result.output[:200]}")
    return result.output


def first_observation() -> str:
    """The user message the episode starts from, for the bare client."""
    from gem_eval import make

    obs, _ = make(ENV_ID, **ENV_ARGS).reset(seed=0)
    return str(obs)


# -- gem-eval run ------------------------------------------------------------------------------


def gem_eval_run(base_url: str, backend: str, episodes: int, expected: str) -> Played:
    """One whole ``gem-eval run`` of the workload, its records checked."""
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "overhead.yaml"
        suite.write_text(
            SUITE.format(
                episodes=episodes,
                corpus=json.dumps(str(CORPUS)),
                env_id=ENV_ID,
                env_args=json.dumps(ENV_ARGS),
            )
        )
        results = Path(tmp) / "results"
        cmd = [str(Path(sys.executable).with_name("gem-eval")), "run", "--suite", str(suite)]
        cmd += ["--model", "openai/fake", "--model-base-url", base_url]
        cmd += [] if backend == "default" else ["--model-backend", backend]
        cmd += ["--concurrency", str(episodes), "--max-connections", str(IN_FLIGHT)]
        cmd += ["--results-dir", str(results), "--quiet"]
        command = run_command(cmd, cwd=Path(tmp))
        records = read_records(results)
        (manifest,) = results.glob("*/manifest.json")
        used = json.loads(manifest.read_text())["models"][0]["backend"]
    # The default path of an openai/* model at a base URL is the direct client.
    if used != ("openai" if backend == "default" else backend):
        raise BenchError(f"--model-backend {backend}: the run used the {used} client")
    check_records(records, episodes, expected)
    window = max(r.finished_at for r in records) - min(r.started_at for r in records)
    return Played(command, window)


def read_records(results: Path) -> list[EpisodeRecord]:
    """The records of the one run in ``results``, read as gem-eval reads them."""
    from gem_eval.store import RunDir

    runs = [p.parent for p in results.glob("*/manifest.json")]
    if len(runs) != 1:
        raise BenchError(f"expected one run directory in {results}, found {len(runs)}")
    return list(RunDir(runs[0]).records())


def check_records(records: list[EpisodeRecord], episodes: int, expected: str) -> None:
    """Raise :class:`BenchError` unless every episode did the intended work."""
    if len({r.key for r in records}) != episodes or len(records) != episodes:
        raise BenchError(f"{len(records)} records for {episodes} episodes")
    for record in records:
        steps = record.trajectory.steps if record.trajectory else []
        events = [e for s in steps for e in s.tool_events]
        problem = None
        if (record.outcome, record.success, record.score) != ("completed", True, 1.0):
            problem = f"outcome {record.outcome}, score {record.score}"
        elif record.turns != CALLS_PER_EPISODE or len(steps) != CALLS_PER_EPISODE:
            problem = f"{record.turns} turns"
        elif record.retries:
            problem = f"{record.retries} retries"
        elif len(events) != TOOL_CALLS or any(e.name != "search" for e in events):
            problem = f"tool events {[e.name for e in events]}"
        elif any(e.is_error or e.output != expected for e in events):
            wrong = next(e for e in events if e.is_error or e.output != expected)
            problem = f"tool output {wrong.output[:120]!r}"
        if problem is not None:
            error = record.trajectory.error if record.trajectory else None
            raise BenchError(f"episode {record.key}: {problem} ({error})")


# -- the bare client ---------------------------------------------------------------------------


def bare_client_run(base_url: str, episodes: int, expected: str) -> Played:
    """This script as a bare ``openai.AsyncOpenAI`` client, in its own process, checked."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--bare", base_url]
    cmd += ["--episodes", str(episodes), "--observation", first_observation()]
    command = run_command(cmd, cwd=ROOT)
    report = json.loads(command.stdout.splitlines()[-1])
    if report["calls"] != episodes * CALLS_PER_EPISODE or report["answers"] != episodes:
        raise BenchError(f"the bare client made {report['calls']} calls: {report}")
    if report["tool_outputs"] != [expected]:
        raise BenchError(f"the bare client's tool outputs differ: {report['tool_outputs']}")
    return Played(command, report["window_s"])


async def bare_client(base_url: str, episodes: int, observation: str) -> dict[str, Any]:
    """N episodes with nothing but the SDK and the tool; what a harness must not exceed."""
    import openai
    from openai.types.chat import ChatCompletionMessageFunctionToolCall

    from gem_eval.tools.search import BM25Backend, SearchTool

    client = openai.AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
    tool = SearchTool(BM25Backend(CORPUS))
    schemas: Any = [tool.schema()]
    slots = asyncio.Semaphore(IN_FLIGHT)
    calls, answers, outputs = 0, 0, set()

    async def episode() -> None:
        nonlocal calls, answers
        messages: list[Any] = [{"role": "user", "content": observation}]
        while True:
            async with slots:
                reply = await client.chat.completions.create(
                    model="fake", messages=messages, tools=schemas
                )
            calls += 1
            message = reply.choices[0].message
            if not message.tool_calls:
                answers += message.content == ANSWER
                return
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content or "",
                    "tool_calls": [c.model_dump() for c in message.tool_calls],
                }
            )
            for call in message.tool_calls:
                if not isinstance(call, ChatCompletionMessageFunctionToolCall):
                    raise BenchError(f"not a function call: {call}")
                result = await tool.call(json.loads(call.function.arguments))
                outputs.add(result.output)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result.output})

    start = time.perf_counter()
    await asyncio.gather(*(episode() for _ in range(episodes)))
    window = time.perf_counter() - start
    await client.close()
    await tool.backend.aclose()
    return {"window_s": window, "calls": calls, "answers": answers, "tool_outputs": list(outputs)}


# -- the report --------------------------------------------------------------------------------


def describe(label: str, played: Played, calls: int) -> str:
    cmd = played.command
    return (
        f"  {label:<22} command {cmd.wall_s:6.2f} s, playing {played.window_s:6.2f} s, "
        f"CPU {cmd.cpu_s / calls * 1000:5.2f} ms/call, peak RSS {cmd.peak_rss_mb:4.0f} MB"
    )


def best(runs: list[Played]) -> Played:
    """The best of repeated runs: each measure's minimum (other load only adds time)."""
    commands = [r.command for r in runs]
    fastest = min(commands, key=lambda c: c.wall_s)
    command = Command(
        fastest.wall_s,
        min(c.cpu_s for c in commands),
        max(c.peak_rss_mb for c in commands),
        fastest.stdout,
    )
    return Played(command, min(r.window_s for r in runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument(
        "--backend",
        action="append",
        choices=["default", "openai", "litellm"],
        help="default: all three (default: no --model-backend given)",
    )
    parser.add_argument("--quick", action="store_true", help="skip the latency-bound regime")
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs of each side, alternating; the best counts"
    )
    parser.add_argument("--bare", metavar="BASE_URL", help=argparse.SUPPRESS)
    parser.add_argument("--observation", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n = args.episodes
    if args.bare:
        report = asyncio.run(bare_client(args.bare, n, args.observation))
        print(json.dumps(report))
        return
    backends = args.backend or ["default", "openai", "litellm"]
    calls = n * CALLS_PER_EPISODE
    expected = expected_tool_output()
    print(
        f"{n} episodes x {CALLS_PER_EPISODE} calls ({TOOL_CALLS} searches), {IN_FLIGHT} at a time"
    )
    figures: list[str] = []

    if not args.quick:
        ideal = calls * 1.0 / IN_FLIGHT
        # Each connection makes its calls one after another: some make ceil(calls / 64).
        floor = math.ceil(calls / IN_FLIGHT) * 1.0
        print(
            f"latency-bound, 1.0 s a call: ideal {ideal:.2f} s "
            f"(no schedule beats {floor:.2f} s = {floor / ideal:.3f} x ideal)"
        )
        with FakeServer(latency=1.0) as server:
            runs: dict[str, list[Played]] = {b: [] for b in backends}
            for _ in range(args.repeats):
                for backend in backends:
                    runs[backend].append(gem_eval_run(server.base_url, backend, n, expected))
                    print(describe(f"gem-eval run ({backend})", runs[backend][-1], calls))
        for backend in backends:
            played = best(runs[backend])
            ratio = played.command.wall_s / ideal
            figures.append(f"ratio_latency_bound[{backend}]={ratio:.2f}")
            ratio = played.window_s / ideal
            figures.append(f"ratio_latency_bound_excl_startup[{backend}]={ratio:.2f}")

    print("CPU-bound, 0.1 s a call")
    with FakeServer(latency=0.1) as server:
        runs = {b: [] for b in ["bare", *backends]}
        for _ in range(args.repeats):
            runs["bare"].append(bare_client_run(server.base_url, n, expected))
            print(describe("bare openai client", runs["bare"][-1], calls))
            for backend in backends:
                runs[backend].append(gem_eval_run(server.base_url, backend, n, expected))
                print(describe(f"gem-eval run ({backend})", runs[backend][-1], calls))
    bare = best(runs["bare"])
    for backend in backends:
        played = best(runs[backend])
        ratio = played.command.wall_s / bare.command.wall_s
        figures.append(f"ratio_vs_bare_client[{backend}]={ratio:.2f}")
        ratio = played.window_s / bare.window_s
        figures.append(f"ratio_vs_bare_client_excl_startup[{backend}]={ratio:.2f}")
        ratio = played.command.cpu_s / bare.command.cpu_s
        figures.append(f"cpu_ratio_vs_bare_client[{backend}]={ratio:.2f}")
    print("\n".join(figures))


if __name__ == "__main__":
    try:
        main()
    except BenchError as exc:
        sys.exit(f"bench: no figures: {exc}")
