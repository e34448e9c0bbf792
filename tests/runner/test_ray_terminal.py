"""Terminal tasks on a two-node Ray cluster, each node with its own Docker engine.

node_a (the head) uses the machine's daemon; node_b a second daemon of the test's own
(:mod:`tests.fixtures.second_dockerd`, no network), reached through the ``DOCKER_HOST``
its ``ray start`` was given. Each node builds the run's task images on its own engine
(the terminal tasks' base image, which needs the internet to build, is loaded into
node_b as a node's ``gem-eval sandbox build-base`` would make it), grades its episodes
with the verifier and the integrity audit in its own containers, and removes them at
the end. A node whose engine is not there at all is dropped at set-up. Stopping
node_b's engine mid-run loses node_b: its episodes are played again at once on node_a,
and the run finishes whole.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gem_eval.records import EpisodeRecord, ModelSpec
from gem_eval.runner.session import RunOptions, execute_run, plan_run
from gem_eval.sandbox.images import build_image
from tests.e2e.test_run_cli import gem_eval
from tests.fixtures import second_dockerd
from tests.fixtures.ray_cluster import REPO, Cluster, head_node

pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.slow]

FIXTURES = REPO / "tests" / "fixtures" / "terminal"
TASKS = ("tb2-count-words", "tb2-checksum", "tb1-sum-numbers")
BASE = REPO / "tasks" / "terminal" / "base"


def suite_text(tasks: Path) -> str:
    return f"""
name: ray-terminal
defaults:
  sandbox:
    image_map:
      "python:3*": {BASE}
      "ghcr.io/laude-institute/t-bench/*": {BASE}
tasks:
  - id: tb
    env: terminal:Task-v0
    args: {{path: {tasks}}}
"""


@pytest.fixture(scope="module")
def engine_b() -> Iterator[second_dockerd.SecondDockerd]:
    """node_b's engine: the base images there, no task image yet."""
    terminal_base = build_image(BASE)  # on the machine's daemon (cached by content)
    with second_dockerd.for_tests() as daemon:
        daemon.load_image(terminal_base)
        yield daemon


@pytest.fixture(scope="module")
def cluster(engine_b: second_dockerd.SecondDockerd) -> Iterator[Cluster]:
    with head_node() as head:
        waits = {"GEM_EVAL_ENGINE_WAIT_S": "3", "GEM_EVAL_CLEANUP_WAIT_S": "2"}
        head.add_node("node_b", {"DOCKER_HOST": engine_b.host, **waits})
        yield head


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    for name in TASKS:
        shutil.copytree(FIXTURES / name, tasks / name)
    path = tmp_path / "suite.yaml"
    path.write_text(suite_text(tasks))
    return path


def task_images(daemon_images: str) -> set[str]:
    return {line for line in daemon_images.split() if line.startswith("gem-eval/task:")}


def test_each_node_builds_plays_audits_and_cleans_up_on_its_own_engine(
    cluster: Cluster, engine_b: second_dockerd.SecondDockerd, suite: Path, tmp_path: Path
) -> None:
    """node_c, whose engine is not there, is dropped at set-up; the others play."""
    before = task_images(engine_b.docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout)
    no_engine = {"DOCKER_HOST": f"unix://{tmp_path}/none.sock", "GEM_EVAL_ENGINE_WAIT_S": "1"}
    cluster.add_node("node_c", no_engine)
    said: list[str] = []
    options = RunOptions(concurrency=4, epochs=2, no_network=True)  # 6 episodes
    plan = plan_run(str(suite), [ModelSpec(name="oracle")], options, tmp_path / "r")
    try:
        summary = asyncio.run(
            execute_run(plan, log=said.append, on_ray=True, ray_address=cluster.address)
        )
    finally:
        cluster.kill("node_c")
    records = list(plan.run_dir.records())
    assert summary.status == "finished" and len(records) == 6
    assert all(r.outcome == "completed" and r.success for r in records), [
        (r.task_id, r.outcome, r.score) for r in records
    ]
    # Graded in full on both nodes: the verifier and the integrity audit timed in each.
    assert all({"verifier", "audit"} <= set(r.phases or {}) for r in records)
    manifest = plan.run_dir.read_manifest()
    assert manifest.executor == "ray"
    about = manifest.resources["ray"]
    [(node_c, why)] = about["lost"].items()
    assert "failed" in why and "Docker is not running" in why, why
    played = {node: n for node, n in about["nodes"].items() if node != node_c}
    assert len(played) == 2 and all(played.values()) and sum(played.values()) == 6, about
    assert about["nodes"][node_c] == 0
    # node_b built the task images on its engine (they were not there before).
    after = task_images(engine_b.docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout)
    assert len(after - before) == len(TASKS), (before, after)
    assert sum("building gem-eval/task:" in line for line in said) >= len(TASKS), said
    # Nothing of the run is left on either engine.
    label = f"gem-eval.run={manifest.run_id}"
    assert engine_b.containers(label) == []
    assert _machine_containers(label) == []


def test_a_nodes_engine_stopping_mid_run_loses_the_node_not_the_episodes(
    cluster: Cluster, engine_b: second_dockerd.SecondDockerd, suite: Path, tmp_path: Path
) -> None:
    said: list[str] = []
    options = RunOptions(concurrency=4, epochs=3, no_network=True)  # 9 episodes
    plan = plan_run(str(suite), [ModelSpec(name="oracle")], options, tmp_path / "r")
    label = f"gem-eval.run={plan.manifest.run_id}"
    stopped: list[bool] = []

    def stop_engine_b(record: EpisodeRecord) -> None:
        # Once an episode is done, while node_b holds one of its own in a container.
        if not stopped and engine_b.containers(label):
            engine_b.stop()
            stopped.append(True)

    try:
        summary = asyncio.run(
            execute_run(
                plan,
                sinks=[stop_engine_b],
                log=said.append,
                on_ray=True,
                ray_address=cluster.address,
            )
        )
    finally:
        if engine_b.process is None:
            engine_b.start()
    assert stopped, "node_b never held a container when an episode ended"
    records = list(plan.run_dir.records())
    assert len(records) == len({r.key for r in records}) == 9  # each episode once
    assert {r.outcome for r in records} == {"completed"}, [r.outcome for r in records]
    assert summary.status == "finished"
    about = plan.run_dir.read_manifest().resources["ray"]
    # node_b, for its engine (node_c, killed by the test before, may be listed too: the
    # cluster can count a node killed a moment ago as alive).
    [why] = [w for w in about["lost"].values() if "Docker" in w]
    assert "the Docker engine is unreachable" in why
    assert about["retried"] >= 1  # what node_b held when its engine stopped
    # node_b could not remove its containers: its warning reached the driver, naming the
    # command; with the engine back, the command removes them.
    command = f"gem-eval sandbox cleanup --run {plan.manifest.run_id}"
    assert any(command in line for line in said), said
    assert _machine_containers(label) == []
    assert engine_b.containers(label)  # stopped with the engine, not removed
    cleaned = gem_eval(*command.split()[1:], results=tmp_path / "r", env=engine_b.env)
    assert cleaned.returncode == 0, cleaned.stderr
    assert engine_b.containers(label) == []


def _machine_containers(label: str) -> list[str]:
    from gem_eval.sandbox import docker_client

    found = docker_client.client().containers.list(all=True, filters={"label": label})
    return [c.id for c in found]
