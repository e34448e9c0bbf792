"""Throughput under faults: ``gem-eval run`` against a server that fails as real ones do.

The workload (issues 12, 26): N episodes (default 1000) of a question-answering task, each
five model calls (four ``search`` tool calls over the bundled corpus, then the answer),
64 episodes in flight, 0.1 s server latency, default retry flags. Per backend, it runs
``gem-eval run`` as a user does (``--suite ... --model openai/fake --model-base-url
URL``, a separate process) against the fake OpenAI server (``tests/fixtures/
openai_server.py``, another process), alternately:

* fault-free;
* with the fault mix drawn per request from a seeded RNG: 5% 429 (Retry-After 1 s),
  5% 500, 2% malformed bodies, 2% dropped connections, 1% hangs (the server answers
  only after 300 s, longer than any client waits; ``--hang-seconds`` shortens that, to
  catch a client that gives up on a request but leaves it open).

each ``--repeats`` times (default 3; the faulty runs with seeds 0, 1, 2 ...). Before
printing a figure the bench checks that every run did the intended work: every episode
is recorded, made its five calls, got real search results (not tool errors) and
answered, without a retry when there were no faults (no sound call was cut); the
faulty server injected every fault, each in its intended proportion
(within four standard deviations). Then, per backend, one line::

    scored=1000/1000 duplicated_steps=0 wall_vs_faultfree=X

``scored``: episodes answered correctly (the worst faulty run). ``duplicated_steps``:
steps (one episode's conversation prefix) that the server answered successfully more
than once on a connection the client still held: a reply the harness used or threw away,
then asked again (summed over the faulty runs). A retry after a hang that never answered
is not one (the client had hung up). ``wall_vs_faultfree``: wall time of the faulty run
over the fault-free run, each condition's fastest (the machine may be shared: load only
adds time); target <= 1.3. Every run's figures go to stderr.

The size: 1000 episodes at 64 in flight are some 16 waves of episodes, so the fault-free
wall is the harness's throughput, not one conversation: a faulted call's forced wait (a
1 s ``Retry-After``, a hang cut after a couple of seconds, then its retry) overlaps other
episodes' work instead of setting the wall, as it would with 200 episodes (3 waves, where
the slowest conversation's waits are most of the wall). What the ratio then measures is
what faults cost the run's throughput: retried calls, and waits that hold back other calls.

Run: ``.venv/bin/python bench/fault_tolerance.py [--episodes 1000] [--backend openai]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gem_eval.records import EpisodeRecord  # noqa: E402
from tests.fixtures._script import STANDARD_MIX, FaultMix  # noqa: E402

CALLS_PER_EPISODE = 5
CONCURRENCY = 64
LATENCY_S = 0.1
QUERY = "Verran Lighthouse designer"
ANSWER = "Odile Marchetti"
RESULT_MARK = "[1] Verran Lighthouse"  # the first search hit for QUERY in the corpus
CORPUS = REPO / "tasks" / "data" / "search" / "corpus.jsonl"

SUITE = """\
name: fault-tolerance
description: Four searches over the bundled corpus, then the answer.
defaults:
  scorer: success
  seed: 0
tasks:
  - id: lighthouse
    env: qa:QA-v0
    dataset:
      path: {questions}
      fields: {{question: question, answer: answers}}
    tools:
      - {{name: search, corpus: {corpus}, k: 3}}
    tool_mode: native
    limits: {{max_turns: 6}}
"""


class BenchError(RuntimeError):
    """The runs did not do the intended work: no figure is printed."""


@dataclass(frozen=True)
class RunResult:
    """One ``gem-eval run`` and what the server saw."""

    wall_s: float
    records: list[EpisodeRecord]
    stats: dict[str, Any]


def write_suite(root: Path, episodes: int) -> Path:
    """A suite of ``episodes`` distinct questions (distinct prompts: distinct steps)."""
    questions = root / "questions.jsonl"
    with questions.open("w") as out:
        for i in range(episodes):
            row = {
                "id": f"q{i}",
                "question": f"(#{i}) Who designed the Verran Lighthouse on Quessel?",
                "answers": [ANSWER],
            }
            out.write(json.dumps(row) + "\n")
    suite = root / "fault-tolerance.yaml"
    suite.write_text(SUITE.format(questions=questions, corpus=CORPUS))
    return suite


class Server:
    """The fake OpenAI server in its own process."""

    def __init__(
        self, fault_mix: str | None, seed: int, hang_s: float, latency_s: float = LATENCY_S
    ) -> None:
        command = [
            sys.executable,
            "-m",
            "tests.fixtures.openai_server",
            "--port=0",
            f"--latency={latency_s}",
            "--scenario=tool_loop",
            f"--tool-calls={CALLS_PER_EPISODE - 1}",
            "--tool-name=search",
            f"--tool-arguments={json.dumps({'query': QUERY})}",
            f"--answer=<answer>{ANSWER}</answer>",
            f"--seed={seed}",
            f"--hang-seconds={hang_s}",
        ]
        if fault_mix:
            command.append(f"--fault-mix={fault_mix}")
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("READY "):
            self.close()
            raise BenchError(f"the fake server did not start: {line!r}")
        self.base_url = line.split()[1]

    def stats(self) -> dict[str, Any]:
        root = self.base_url.removesuffix("/v1")
        with urllib.request.urlopen(f"{root}/stats", timeout=30) as response:
            stats: dict[str, Any] = json.load(response)
        return stats

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def run_gem_eval(suite: Path, results: Path, base_url: str, backend: str) -> float:
    """``gem-eval run`` as a user types it; returns its wall time."""
    command = [
        str(Path(sys.executable).with_name("gem-eval")),
        "run",
        f"--suite={suite}",
        "--model=openai/fake",
        f"--model-base-url={base_url}",
        f"--model-backend={backend}",
        f"--concurrency={CONCURRENCY}",
        f"--results-dir={results}",
    ]
    env = os.environ | {"GEM_EVAL_CACHE": str(results.parent / "cache")}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise BenchError(f"gem-eval run exited {done.returncode}:\n{tail}")
    return wall


def one_run(
    root: Path,
    name: str,
    episodes: int,
    backend: str,
    mix: str | None,
    seed: int = 0,
    hang_s: float = 300.0,
) -> RunResult:
    work = root / name
    work.mkdir()
    suite = write_suite(work, episodes)
    server = Server(mix, seed=seed, hang_s=hang_s)
    try:
        wall = run_gem_eval(suite, work / "results", server.base_url, backend)
        stats = server.stats()
    finally:
        server.close()
    files = list((work / "results").glob("*/episodes.jsonl"))
    if len(files) != 1:
        raise BenchError(f"{name}: expected one run directory, found {files}")
    lines = files[0].read_text().splitlines()
    records = [EpisodeRecord.model_validate_json(line) for line in lines if line.strip()]
    return RunResult(wall, records, stats)


def check_work(name: str, run: RunResult, episodes: int) -> None:
    """Every episode recorded, five calls, real search results, an answer."""
    if len(run.records) != episodes:
        raise BenchError(f"{name}: {len(run.records)} records, expected {episodes}")
    for record in run.records:
        steps = record.trajectory.steps if record.trajectory is not None else []
        where = f"{name}: episode {record.key}"
        if record.outcome != "completed" or len(steps) != CALLS_PER_EPISODE:
            raise BenchError(f"{where}: {record.outcome} after {len(steps)} calls")
        for step in steps[:-1]:
            events = step.tool_events
            if len(events) != 1 or events[0].name != "search":
                raise BenchError(f"{where}: step {step.index} made no search call")
            if events[0].is_error or RESULT_MARK not in events[0].output:
                raise BenchError(f"{where}: search gave {events[0].output[:200]!r}")
        if steps[-1].tool_events or steps[-1].action is None:
            raise BenchError(f"{where}: the last call did not answer")
    steps = run.stats["steps"]
    if steps != episodes * CALLS_PER_EPISODE:
        raise BenchError(f"{name}: the server answered {steps} distinct steps")


def check_faults(name: str, stats: dict[str, Any], mix: FaultMix) -> None:
    """Each fault injected, in its share of the requests (within 4 sigma)."""
    n = stats["requests"]
    answers: dict[str, int] = stats["answers"]
    for label, share in mix.shares().items():
        seen = answers.get(label, 0)
        slack = 4 * math.sqrt(n * share * (1 - share)) + 1
        if share > 0 and (seen == 0 or abs(seen - n * share) > slack):
            raise BenchError(f"{name}: {seen} x {label} in {n} requests, expected ~{n * share:.0f}")


def describe(name: str, run: RunResult) -> str:
    """Where a run's time went: first-try call latencies, the slowest episode."""
    latencies = sorted(
        step.output.latency_s
        for record in run.records
        if record.trajectory is not None
        for step in record.trajectory.steps
        if step.output.retries == 0
    )
    slowest = max(run.records, key=lambda r: r.finished_at - r.started_at)
    steps = slowest.trajectory.steps if slowest.trajectory is not None else []
    calls = " ".join(f"{s.output.latency_s:.1f}/{s.output.retries}" for s in steps)
    start = min(r.started_at for r in run.records)
    end = max(r.finished_at for r in run.records)
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else 0.0
    return (
        f"{name}: wall {run.wall_s:.1f} s, episodes span {end - start:.1f} s; first-try calls "
        f"p50 {latencies[len(latencies) // 2] if latencies else 0:.2f} s, p95 {p95:.2f} s, "
        f"max {latencies[-1] if latencies else 0:.2f} s; slowest episode "
        f"{slowest.finished_at - slowest.started_at:.1f} s (started "
        f"{slowest.started_at - start:.1f} s in; its calls' seconds/retries: {calls})"
    )


def bench(episodes: int, backend: str, hang_s: float, repeats: int) -> str:
    """Fault-free and faulty runs, alternating, ``repeats`` times each; the figure line."""
    mix = FaultMix.parse(STANDARD_MIX)
    clean_walls: list[float] = []
    faulty_walls: list[float] = []
    scored, duplicated = episodes, 0
    with tempfile.TemporaryDirectory(prefix="gem-fault-") as tmp:
        root = Path(tmp)
        for i in range(repeats):
            name = f"[{backend}] fault-free #{i + 1}"
            clean = one_run(root, f"clean-{i}", episodes, backend, None)
            check_work(name, clean, episodes)
            if set(clean.stats["answers"]) != {"reply"}:
                raise BenchError(f"{name}: the server answered {clean.stats['answers']}")
            if any(r.retries for r in clean.records):  # a sound call was cut (or failed)
                raise BenchError(f"{name}: {sum(r.retries for r in clean.records)} retries")
            print(describe(name, clean), file=sys.stderr)
            name = f"[{backend}] faulty #{i + 1}"
            faulty = one_run(root, f"faulty-{i}", episodes, backend, STANDARD_MIX, i, hang_s)
            check_work(name, faulty, episodes)
            check_faults(name, faulty.stats, mix)
            print(describe(name, faulty), file=sys.stderr)
            print(
                f"{name}: {faulty.stats['requests']} requests ({faulty.stats['answers']}), "
                f"{faulty.stats['abandoned']} dropped or abandoned by the client, "
                f"{sum(r.retries for r in faulty.records)} retries; steps by requests "
                f"made: {faulty.stats['requests_per_step']}",
                file=sys.stderr,
            )
            clean_walls.append(clean.wall_s)
            faulty_walls.append(faulty.wall_s)
            scored = min(scored, sum(1 for r in faulty.records if r.success and r.score == 1.0))
            duplicated += faulty.stats["duplicated_steps"]
    # The machine is shared: other work only ever adds time, so each condition's fastest
    # run is the best estimate of what it costs.
    return (
        f"scored={scored}/{episodes} duplicated_steps={duplicated} "
        f"wall_vs_faultfree={min(faulty_walls) / min(clean_walls):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument(
        "--backend", choices=["litellm", "openai", "both"], default="both", help="model backend"
    )
    parser.add_argument(
        "--hang-seconds",
        type=float,
        default=300.0,
        help="how long a hung request waits before the server answers it",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each condition (seeds 0, 1, ...)"
    )
    args = parser.parse_args()
    backends = ["openai", "litellm"] if args.backend == "both" else [args.backend]
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f} on {os.cpu_count()} cores", file=sys.stderr)
    for backend in backends:
        try:
            line = bench(args.episodes, backend, args.hang_seconds, args.repeats)
        except BenchError as exc:
            print(f"[{backend}] no figure: {exc}", file=sys.stderr)
            sys.exit(1)
        print(f"[{backend}] {line}" if len(backends) > 1 else line, flush=True)


if __name__ == "__main__":
    main()
