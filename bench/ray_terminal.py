"""Terminal tasks in Docker on one Ray node and on two, each node with its own engine.

Run: ``.venv/bin/python bench/ray_terminal.py [--epochs 3] [--concurrency 4] [--repeats 2]``
(as root: the second node's Docker daemon is started by the bench).

Workload: the oracle (each task's ``solution/solve.sh``) on four Terminal-Bench 2 tasks
of ``tasks/terminal`` x ``--epochs``, ``--concurrency`` episodes in flight, ``--no-network``,
each episode in its own container, graded by the task's tests and the integrity audit.
Three sides, each a whole ``gem-eval run --model oracle`` subprocess:

* ``local``: the default executor, on the machine's Docker engine.
* ``ray1``: ``--executor ray`` on a one-node cluster (``ray start --head --num-cpus 1``)
  whose node uses the machine's engine.
* ``ray2``: the same after a second node joined, whose ``DOCKER_HOST`` is a second
  Docker daemon started by the bench (``tests.fixtures.second_dockerd``: its own data
  root, containerd and network namespace). The terminal base image, which needs the
  internet to build, is loaded into it (a real node runs ``gem-eval sandbox
  build-base``); the task images are built by the node itself, in an untimed first run.

Each side plays once untimed (image builds on each engine, cold caches), then ``local``
and ``ray1`` alternate ``--repeats`` times (load from other processes falls on both),
then ``ray2`` runs as often; the best playing window of each side counts.

Before printing a figure the bench checks every run: one record per episode, each
``completed`` with score 1 and its ``verifier`` and ``audit`` phases timed; on Ray,
every node played episodes (the manifest's ``resources.ray.nodes``); no container of
the run left on either engine. Both nodes share this machine's two cores, so ``ray2``
shows what a second node costs and gives where the work is CPU-bound, not the speed-up
of a second machine: see the README's "Running on a cluster" for a real one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_overhead import ROOT, BenchError, Command, read_records, run_command
from ray_scaling import LocalCluster

TASKS = ("sort-downloads", "access-log-report", "git-lost-commit", "sqlite-top-customers")
BASE = ROOT / "tasks" / "terminal" / "base"
SUITE = """name: ray-terminal
defaults:
  sandbox:
    image_map:
      "python:3*": {base}
      "ubuntu:*": {base}
      "debian:*": {base}
tasks:
  - id: tb
    env: terminal:Task-v0
    args: {{path: {tasks}}}
"""


@dataclass(frozen=True)
class Side:
    command: Command
    window_s: float
    nodes: dict[str, int]


def play(
    suite: Path, episodes: int, args: argparse.Namespace, address: str | None, nodes: int
) -> Side:
    """One whole ``gem-eval run``, checked (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        cmd = [str(Path(sys.executable).with_name("gem-eval")), "run", "--suite", str(suite)]
        cmd += ["--model", "oracle", "--no-network", "--epochs", str(args.epochs)]
        cmd += ["--concurrency", str(args.concurrency), "--results-dir", str(results), "-q"]
        if address is not None:
            cmd += ["--executor", "ray", "--ray-address", address]
        command = run_command(cmd, cwd=Path(tmp))
        records = read_records(results)
        manifest = json.loads(next(results.glob("*/manifest.json")).read_text())
    if len(records) != episodes or len({r.key for r in records}) != episodes:
        raise BenchError(f"{len(records)} records for {episodes} episodes")
    for record in records:
        if record.outcome != "completed" or record.score != 1:
            raise BenchError(f"{record.key}: {record.outcome}, score {record.score}")
        if not {"verifier", "audit"} <= set(record.phases or {}):
            raise BenchError(f"{record.key}: graded without its verifier or audit")
    played: dict[str, int] = {}
    if address is not None:
        played = manifest["resources"]["ray"]["nodes"]
        if len(played) != nodes or not all(played.values()):
            raise BenchError(f"episodes per node: {played}, expected {nodes} nodes playing")
    left = leftovers(manifest["run_id"])
    if left:
        raise BenchError(f"containers of run {manifest['run_id']} left: {left}")
    window = max(r.finished_at for r in records) - min(r.started_at for r in records)
    return Side(command, window, played)


ENGINES: list[dict[str, str]] = [{}]  # the environments reaching each engine in use


def leftovers(run_id: str) -> list[str]:
    """Containers labelled with ``run_id`` on any engine of the bench."""
    found = []
    for env in ENGINES:
        ps = ["docker", "ps", "-aq", "--filter", f"label=gem-eval.run={run_id}"]
        out = subprocess.run(
            ps, env={**os.environ, **env}, capture_output=True, text=True, check=True
        )
        found += out.stdout.split()
    return found


@contextmanager
def second_engine() -> Iterator[dict[str, str]]:
    """A second Docker daemon holding the base images; the environment reaching it."""
    sys.path.insert(0, str(ROOT))
    from gem_eval.sandbox.images import build_image
    from tests.fixtures import second_dockerd

    trouble = second_dockerd.problem()
    if trouble is not None:
        raise BenchError(f"no second Docker daemon here: {trouble}")
    terminal_base = build_image(BASE)  # on the machine's engine, cached by content
    with second_dockerd.second_dockerd() as daemon:
        daemon.load_image(terminal_base)
        env = {"DOCKER_HOST": daemon.host}
        ENGINES.append(env)
        try:
            yield env
        finally:
            ENGINES.remove(env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    os.environ["RAY_AUTH_MODE"] = "disabled"  # see bench/ray_scaling.py
    episodes = len(TASKS) * args.epochs
    runs: dict[str, list[Side]] = {"local": [], "ray1": [], "ray2": []}
    cold: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, second_engine() as engine_b:
        tasks = Path(tmp) / "tasks"
        for name in TASKS:
            shutil.copytree(ROOT / "tasks" / "terminal" / name, tasks / name)
        suite = Path(tmp) / "suite.yaml"
        suite.write_text(SUITE.format(base=json.dumps(str(BASE)), tasks=json.dumps(str(tasks))))
        cluster = LocalCluster()
        try:
            cold["local"] = play(suite, episodes, args, None, 0).command.wall_s
            cold["ray1"] = play(suite, episodes, args, cluster.address, 1).command.wall_s
            for _ in range(args.repeats):
                runs["local"].append(play(suite, episodes, args, None, 0))
                runs["ray1"].append(play(suite, episodes, args, cluster.address, 1))
            cluster.add_node(engine_b)
            cold["ray2"] = play(suite, episodes, args, cluster.address, 2).command.wall_s
            for _ in range(args.repeats):
                runs["ray2"].append(play(suite, episodes, args, cluster.address, 2))
        finally:
            cluster.close()
    best = {side: min(sides, key=lambda s: s.window_s) for side, sides in runs.items()}
    print(
        f"terminal tasks={len(TASKS)} epochs={args.epochs} episodes={episodes} "
        f"concurrency={args.concurrency} repeats={args.repeats} cores={os.cpu_count()} "
        "(best window of each side; all checks passed)"
    )
    for side, run in best.items():
        line = (
            f"{side}: wall_s={run.command.wall_s:.1f} window_s={run.window_s:.1f} "
            f"s_per_episode={run.window_s / episodes:.2f} first_run_wall_s={cold[side]:.1f}"
        )
        if run.nodes:
            line += f" episodes_per_node={sorted(run.nodes.values())}"
        print(line)
    print(
        f"ratio_window ray1_vs_local={best['ray1'].window_s / best['local'].window_s:.3f} "
        f"ray2_vs_ray1={best['ray2'].window_s / best['ray1'].window_s:.3f}"
    )
    windows = {side: [round(r.window_s, 1) for r in sides] for side, sides in runs.items()}
    print(f"all windows_s: {windows}")


if __name__ == "__main__":
    main()
