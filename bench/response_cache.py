"""A re-run served from the response cache: what it saves, and what the cache costs.

The workload: N episodes (default 200) of a question-answering task, each five model
calls (four ``search`` tool calls over the bundled corpus, then the answer), 64 episodes
in flight, against the fake OpenAI server (``tests/fixtures/openai_server.py``, its own
process) answering after ``--latency`` seconds (default 0.2 s, a fast hosted model).
``gem-eval run`` is run as a user types it, three times on one empty cache and results
directory:

1. without ``--cache`` (the baseline);
2. with ``--cache`` (every call a miss, then stored);
3. with ``--cache`` again (every call a hit).

Before printing, the bench checks the work: every run recorded N episodes, each answered
correctly after its four searches returned real results; the server saw 5N calls in runs
1 and 2 and none in run 3; run 3's steps are all marked cached, and its scores equal run
2's episode by episode. Then one line::

    calls_rerun=0/1000 wall_rerun_vs_first=X wall_storing_vs_plain=Y

``wall_rerun_vs_first``: run 3's wall time over run 2's (what a re-run after a grader fix
costs in time). ``wall_storing_vs_plain``: run 2's over run 1's (what storing every reply
costs). Each run's figures go to stderr.

Run: ``.venv/bin/python bench/response_cache.py [--episodes 200] [--latency 0.2]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from fault_tolerance import (  # noqa: E402
    CALLS_PER_EPISODE,
    RESULT_MARK,
    BenchError,
    Server,
    write_suite,
)

from gem_eval.records import EpisodeRecord  # noqa: E402

CONCURRENCY = 64


def run(suite: Path, root: Path, base_url: str, cache: bool) -> tuple[float, list[EpisodeRecord]]:
    """``gem-eval run`` as a user types it; its wall time and the run's records."""
    results = root / "results"
    before = set(results.iterdir()) if results.exists() else set()
    command = [
        str(Path(sys.executable).with_name("gem-eval")),
        "run",
        f"--suite={suite}",
        "--model=openai/fake",
        f"--model-base-url={base_url}",
        "--model-backend=openai",
        f"--concurrency={CONCURRENCY}",
        f"--results-dir={results}",
        "-q",
    ] + (["--cache"] if cache else [])
    env = os.environ | {"GEM_EVAL_CACHE": str(root / "cache")}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise BenchError(f"gem-eval run exited {done.returncode}:\n{tail}")
    [run_dir] = [p for p in results.iterdir() if p.is_dir() and p not in before]
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    return wall, [EpisodeRecord.model_validate_json(line) for line in lines if line.strip()]


def check_episodes(name: str, records: list[EpisodeRecord], episodes: int) -> None:
    """Every episode answered correctly after four searches that found the corpus."""
    if len(records) != episodes or len({r.key for r in records}) != episodes:
        raise BenchError(f"{name}: {len(records)} records for {episodes} episodes")
    for record in records:
        traj = record.trajectory
        if not record.success or traj is None or len(traj.steps) != CALLS_PER_EPISODE:
            raise BenchError(f"{name}: episode {record.key} did not do the intended work")
        outputs = [e.output for s in traj.steps for e in s.tool_events]
        if len(outputs) != CALLS_PER_EPISODE - 1 or not all(RESULT_MARK in o for o in outputs):
            raise BenchError(f"{name}: episode {record.key}: the searches found nothing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2, help="the server's seconds a reply")
    args = parser.parse_args()
    calls = args.episodes * CALLS_PER_EPISODE
    server = Server(None, seed=0, hang_s=300.0, latency_s=args.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="gem-eval-bench-cache-") as tmp:
            root = Path(tmp)
            suite = write_suite(root, args.episodes)
            walls, seen = [], []
            runs: list[list[EpisodeRecord]] = []
            for name, cache in (("plain", False), ("storing", True), ("rerun", True)):
                before = server.stats()["requests"]
                wall, records = run(suite, root, server.base_url, cache)
                check_episodes(name, records, args.episodes)
                walls.append(wall)
                seen.append(server.stats()["requests"] - before)
                runs.append(records)
                print(f"[{name}] wall={wall:.2f}s calls={seen[-1]}", file=sys.stderr)
    finally:
        server.close()
    if seen[:2] != [calls, calls]:
        raise BenchError(f"the first two runs made {seen[:2]} calls, not {calls} each")
    if seen[2] != 0:
        raise BenchError(f"the re-run made {seen[2]} model calls")
    steps = [s for r in runs[2] if r.trajectory for s in r.trajectory.steps]
    if len(steps) != calls or not all(s.output.cached for s in steps):
        raise BenchError("the re-run's steps are not all served from the cache")
    if {r.key: r.score for r in runs[1]} != {r.key: r.score for r in runs[2]}:
        raise BenchError("the re-run's scores differ from the run it replays")
    print(
        f"calls_rerun={seen[2]}/{calls} wall_rerun_vs_first={walls[2] / walls[1]:.2f} "
        f"wall_storing_vs_plain={walls[1] / walls[0]:.2f}"
    )


if __name__ == "__main__":
    main()
