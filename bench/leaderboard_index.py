"""Leaderboard over 50 runs x 2,000 episodes: from the SQLite index vs from the JSONL files.

Run: ``.venv/bin/python bench/leaderboard_index.py``. Synthesises the runs (no
trajectories; 4 models x 50 tasks x 10 samples each, random scores) into run directories and
``index.sqlite`` in a temporary directory, then times building the per-model, per-task mean
score table (a) from the index with ``Index.episodes_frame`` and a pandas groupby, and (b) by
reading every ``episodes.jsonl`` with pydantic and aggregating. Each side runs REPEATS times,
alternately, from a fresh ``Index`` (no warm Python-side cache); the best wall time counts.
Target: (a) under 1 s.

``--trajectory-steps N`` gives every record an N-step trajectory, as real runs have (the
index never holds them; the JSONL side must parse them): about 2 kB of JSON per step.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from gem_eval.models.base import ModelOutput, Usage
from gem_eval.records import EpisodeRecord, ModelSpec, RunManifest, TaskSpec
from gem_eval.store import Index, RunDir, list_run_ids
from gem_eval.trajectory import Step, Trajectory

RUNS = 50
MODELS = ["model-a", "model-b", "model-c", "model-d"]
TASKS = [f"task-{t:02d}" for t in range(50)]
SAMPLES = 10  # 4 models x 50 tasks x 10 samples = 2,000 episodes per run
REPEATS = 3
OUTCOMES = ["completed"] * 90 + ["truncated"] * 7 + ["infra_error"] * 3

Table = dict[tuple[str, str], float]


def synthesise(root: Path, rng: random.Random, steps: int = 0) -> None:
    """Write RUNS run directories and index them, as a runner would (one transaction each)."""
    tasks = [TaskSpec(id=t, env_id="game:GuessTheNumber-v0") for t in TASKS]
    with Index.for_root(root) as index:
        for r in range(RUNS):
            manifest = RunManifest(
                run_id=f"run-{r:02d}",
                suite="bench",
                suite_hash="0" * 64,
                models=[ModelSpec(name=m) for m in MODELS],
                tasks=tasks,
                episodes_planned=len(MODELS) * len(TASKS) * SAMPLES,
                gem_eval_version="bench",
                host="bench",
                started_at=1_800_000_000.0 + r,
                status="finished",
            )
            records = [
                record(manifest.run_id, m, t, s, rng, steps)
                for m in MODELS
                for t in TASKS
                for s in range(SAMPLES)
            ]
            RunDir.create(root, manifest).extend(records)
            index.add_run(manifest)
            index.add_episodes(records)


def record(
    run_id: str, model: str, task: str, sample: int, rng: random.Random, steps: int
) -> EpisodeRecord:
    outcome = rng.choice(OUTCOMES)
    score = None if outcome == "infra_error" else rng.random()
    return EpisodeRecord.model_validate(
        {
            "run_id": run_id,
            "key": f"{model}|{task}|{sample}|0",
            "model": model,
            "task_id": task,
            "category": "games",
            "sample": sample,
            "epoch": 0,
            "outcome": outcome,
            "score": score,
            "success": score is not None and score > 0.5,
            "turns": rng.randint(1, 20),
            "input_tokens": rng.randint(100, 5000),
            "output_tokens": rng.randint(10, 500),
            "latency_s": rng.random() * 10,
            "started_at": 0.0,
            "finished_at": 1.0,
            "trajectory": trajectory(model, steps) if steps else None,
        }
    )


def trajectory(model: str, steps: int) -> Trajectory:
    """An episode of ``steps`` turns, each with a ~300-character reply and observation."""
    reply, observation = "I think the answer is 42. " * 12, "The number is higher. " * 14
    messages: list[dict[str, object]] = [{"role": "user", "content": observation}]
    for _ in range(steps):
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": observation},
        ]
    return Trajectory(
        env_id="game:GuessTheNumber-v0",
        model=model,
        initial_observation=observation,
        messages=messages,
        steps=[
            Step(
                index=i,
                output=ModelOutput(text=reply, usage=Usage(input_tokens=300, output_tokens=80)),
                action="42",
                observation=observation,
            )
            for i in range(steps)
        ],
    )


def from_index(root: Path) -> Table:
    """(a): the index, a DataFrame, a groupby (infra errors are not scored)."""
    with Index.for_root(root) as index:
        frame = index.episodes_frame()
    scored = frame[frame["outcome"] != "infra_error"]
    means = scored.groupby(["model", "task_id"])["score"].mean()
    return {(str(m), str(t)): float(v) for (m, t), v in means.items()}


def from_jsonl(root: Path) -> Table:
    """(b): every run's JSONL, validated with pydantic, aggregated in Python."""
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for run_id in list_run_ids(root):
        for rec in RunDir(root / run_id).latest_by_key().values():
            if rec.scored and rec.score is not None:
                acc = sums[(rec.model, rec.task_id)]
                acc[0] += rec.score
                acc[1] += 1
    return {k: total / n for k, (total, n) in sums.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--trajectory-steps", type=int, default=0, metavar="N")
    steps = parser.parse_args().trajectory_steps
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        synthesise(root, random.Random(0), steps)
        write_s = time.perf_counter() - start
        episodes = RUNS * len(MODELS) * len(TASKS) * SAMPLES
        size = sum(p.stat().st_size for p in root.glob("*/episodes.jsonl")) / 1e6
        print(
            f"synthesised {RUNS} runs x {episodes // RUNS} episodes "
            f"({steps}-step trajectories, {size:.0f} MB of JSONL) in {write_s:.1f} s"
        )

        start = time.perf_counter()
        with Index(root / "rebuilt.sqlite") as index:
            index.rebuild(root)
        print(f"reindex (gem-eval results reindex): {time.perf_counter() - start:.1f} s")

        best = [float("inf"), float("inf")]
        tables: list[Table] = [{}, {}]
        for _ in range(REPEATS):
            for k, build in enumerate((from_index, from_jsonl)):
                start = time.perf_counter()
                tables[k] = build(root)
                best[k] = min(best[k], time.perf_counter() - start)
        a, b = tables
        cells = len(MODELS) * len(TASKS)
        if len(a) != cells or a.keys() != b.keys() or any(abs(a[k] - b[k]) > 1e-9 for k in a):
            sys.exit(f"bench: no figures: the two tables differ ({len(a)}, {len(b)} cells)")
        print(f"(a) index + pandas groupby : {best[0]:6.3f} s  (target < 1 s)")
        print(f"(b) JSONL + pydantic       : {best[1]:6.3f} s")
        print(f"ratio (b) / (a)            : {best[1] / best[0]:6.1f}x  ({len(a)} cells)")


if __name__ == "__main__":
    main()
