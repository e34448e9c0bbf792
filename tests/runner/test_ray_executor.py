"""The Ray executor on a real two-node cluster started on this machine.

The head node carries the resource ``node_a``, a second ``ray start`` process the
resource ``node_b``; each is its own raylet, so the executor's per-node actors play
episodes on both. The suite grades code in bubblewrap sandboxes (one pool per node), and
its records must match the local executor's key for key. Killing the second node mid-run
costs nothing but time: its episodes in flight are played again on the first. Terminal
tasks, each node with its own Docker engine: ``test_ray_terminal.py``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gem_eval.cli.options import check_executor
from gem_eval.errors import UserError
from gem_eval.models import ScriptedModel
from gem_eval.models.base import (
    GenerateConfig,
    Message,
    Model,
    ModelOutput,
    ToolSchema,
    Usage,
)
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.runner.node_worker import NodeWorker
from gem_eval.runner.ray_executor import RayExecutor, _share
from gem_eval.runner.session import RunOptions, execute_run, plan_run
from gem_eval.store import RunDir
from tests.fixtures.ray_cluster import REPO, Cluster, head_node

STALL = "GEM_EVAL_TEST_STALL"  # set on node_b only: see coder()

# Solves the stdio task "pair-sums" and fails the others: scores that differ by sample.
PROGRAM = (
    "```python\nimport sys\nd = sys.stdin.read().split()\n"
    "print('\\n'.join(str(int(d[1 + 2 * i]) + int(d[2 + 2 * i])) for i in range(int(d[0]))))\n```"
)
SUITE = f"""
name: ray-suite
defaults: {{seed: 0}}
tasks:
  - id: stdio
    env: code:StdIO-v0
    sandbox: {{type: local}}
    samples: 4
    dataset:
      path: {REPO}/tasks/code/stdio.jsonl
      fields: {{question: statement, tests: tests}}
"""


class SlowCoder(ScriptedModel):
    """Answers every task with :data:`PROGRAM`, after ``delay`` seconds, for ``cost``."""

    def __init__(self, name: str, delay: float, cost: float | None = None) -> None:
        reply = ModelOutput(text=PROGRAM, finish_reason="stop", usage=Usage(cost_usd=cost))
        super().__init__([reply], name=name)
        self.delay = delay

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        await asyncio.sleep(self.delay)
        return await super().generate(messages, tools, config)


def coder(spec: ModelSpec) -> Model:
    """The runs' models, built on the nodes (this module is on their PYTHONPATH):
    ``coder`` answers at once, ``slow-coder`` after a second, ``paid-slow-coder`` too,
    for a dollar a call; ``stalling-coder`` after a second, but never on the node
    started with ``STALL`` set."""
    delay = 1.0 if "slow" in spec.name or "stalling" in spec.name else 0.0
    if "stalling" in spec.name and os.environ.get(STALL):
        delay = 3600.0
    return SlowCoder(spec.name, delay, 1.0 if spec.name.startswith("paid") else None)


@pytest.fixture(scope="module")
def head() -> Iterator[Cluster]:
    with head_node() as started:
        yield started


@pytest.fixture
def cluster(head: Cluster) -> Iterator[Cluster]:
    """The head plus a second node (``node_b``, where ``stalling-coder`` stalls), killed
    after the test."""
    head.add_node("node_b", {STALL: "1"})
    try:
        yield head
    finally:
        if "node_b" in head.groups:
            head.kill("node_b")


def _play(
    suite: Path, results: Path, models: list[str], address: str | None, **options: Any
) -> tuple[Any, RunDir]:
    plan = plan_run(str(suite), [ModelSpec(name=m) for m in models], RunOptions(**options), results)
    summary = asyncio.run(
        execute_run(plan, model_factory=coder, on_ray=address is not None, ray_address=address)
    )
    return summary, plan.run_dir


def _essence(record: EpisodeRecord) -> tuple[Any, ...]:
    return (record.outcome, record.score, record.success, record.turns, record.seed)


@pytest.mark.ray
@pytest.mark.bwrap
@pytest.mark.slow
def test_a_suite_on_two_nodes_gives_the_local_executors_records(
    cluster: Cluster, tmp_path: Path
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    local_summary, local_run = _play(suite, tmp_path / "local", ["coder", "slow-coder"], None)
    ray_summary, ray_run = _play(
        suite, tmp_path / "ray", ["coder", "slow-coder"], cluster.address, concurrency=4
    )
    local = {r.key: _essence(r) for r in local_run.records()}
    on_ray = {r.key: _essence(r) for r in ray_run.records()}
    assert len(local) == 8 and on_ray == local
    assert {o for o, *_ in local.values()} == {"completed"}
    assert len({s for _, s, *_ in local.values()}) > 1  # graded: one task passes, others fail
    assert ray_summary.status == local_summary.status == "finished"
    nodes = ray_run.read_manifest().resources["ray"]["nodes"]
    assert len(nodes) == 2 and all(n > 0 for n in nodes.values()), nodes  # both played
    assert sum(nodes.values()) == 8


@pytest.mark.ray
@pytest.mark.bwrap
@pytest.mark.slow
def test_a_node_killed_mid_run_has_its_episodes_played_again_on_another(
    cluster: Cluster, tmp_path: Path
) -> None:
    """node_b's model never answers, so its episodes are in flight when it is killed;
    each is played again at once on node_a, and the run finishes whole."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    options = RunOptions(concurrency=4, epochs=2)  # 8 episodes
    plan = plan_run(str(suite), [ModelSpec(name="stalling-coder")], options, tmp_path / "r")
    seen: list[EpisodeRecord] = []

    def kill_after_two(record: EpisodeRecord) -> None:
        seen.append(record)
        if len(seen) == 2:  # node_a's: node_b holds its episodes, stalled
            cluster.kill("node_b")

    summary = asyncio.run(
        execute_run(
            plan,
            model_factory=coder,
            sinks=[kill_after_two],
            on_ray=True,
            ray_address=cluster.address,
        )
    )
    records = list(plan.run_dir.records())
    assert len(records) == len({r.key for r in records}) == 8  # each episode once
    assert {r.outcome for r in records} == {"completed"} and summary.status == "finished"
    about = plan.run_dir.read_manifest().resources["ray"]
    [lost] = about["lost"].values()
    assert lost.endswith(("ActorDiedError", "RayActorError", "NodeDiedError")), lost
    assert about["retried"] >= 1  # node_b's stalled episodes
    assert sorted(about["nodes"].values()) == [0, 8]  # every record came from node_a


@pytest.mark.ray
@pytest.mark.bwrap
@pytest.mark.slow
def test_max_cost_holds_across_the_nodes(cluster: Cluster, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    options = RunOptions(concurrency=2, epochs=2, max_cost_usd=2.5)  # $1 an episode, 8 planned
    plan = plan_run(str(suite), [ModelSpec(name="paid-slow-coder")], options, tmp_path / "r")
    summary = asyncio.run(
        execute_run(plan, model_factory=coder, on_ray=True, ray_address=cluster.address)
    )
    records = list(plan.run_dir.records())
    assert summary.status == "budget_exhausted"
    assert plan.run_dir.read_manifest().executor == "ray"  # where the run was played
    # The accounting of one machine: the first episode alone (nothing is known of what one
    # costs), then as many as fit beside those in flight; a third $1 episode would not
    # fit in the $0.5 left, so it does not start.
    assert len(records) == 2 and summary.cost_usd == 2.0
    assert all(r.outcome == "completed" for r in records)
    assert summary.held_back is not None and "more than the $0.500000 left" in summary.held_back


@pytest.mark.ray
@pytest.mark.bwrap
@pytest.mark.slow
def test_ctrl_c_cancels_the_episodes_on_the_nodes(cluster: Cluster, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    options = RunOptions(concurrency=4, epochs=2)
    plan = plan_run(str(suite), [ModelSpec(name="slow-coder")], options, tmp_path / "r")

    async def main() -> Any:
        cancelled: list[bool] = []

        def interrupt(record: EpisodeRecord) -> None:  # Ctrl-C once, after the first episode
            if not cancelled:
                cancelled.append(run.cancel())

        run = asyncio.create_task(
            execute_run(
                plan,
                model_factory=coder,
                sinks=[interrupt],
                on_ray=True,
                ray_address=cluster.address,
            )
        )
        return await run

    summary = asyncio.run(main())
    outcomes = sorted(r.outcome for r in plan.run_dir.records())
    assert summary.status == plan.run_dir.read_manifest().status == "interrupted"
    assert "completed" in outcomes and "cancelled" in outcomes  # no harness_error
    assert set(outcomes) == {"completed", "cancelled"} and len(outcomes) < 8


# -- without a cluster -----------------------------------------------------------------------


def test_a_models_connection_cap_is_split_between_the_nodes() -> None:
    assert _share(ModelSpec(name="m", max_connections=64), 64, 2).max_connections == 32
    assert _share(ModelSpec(name="m"), 9, 2).max_connections == 4  # the run's concurrency
    assert _share(ModelSpec(name="m", max_connections=1), 64, 3).max_connections == 1


def test_a_nodes_attachments_travel_beside_its_record(tmp_path: Path) -> None:
    worker = NodeWorker(coder, {"run_id": None})
    spec = EpisodeSpec(
        key="k",
        task=TaskSpec(id="t", env_id="e"),
        model=ModelSpec(name="m"),
        sample=0,
        epoch=0,
        seed=0,
    )

    async def play(run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        record = EpisodeRecord(
            run_id=run_id,
            key=spec.key,
            model="m",
            task_id="t",
            sample=0,
            epoch=0,
            outcome="completed",
            score=1.0,
            success=True,
            turns=1,
            started_at=0.0,
            finished_at=1.0,
        )
        record.attach({"session.cast": "cast"})
        return record

    worker.executor.run = play  # type: ignore[method-assign]
    record, files = asyncio.run(worker.run("r", spec))
    assert files == {"session.cast": "cast"}
    assert record.take_files() == {}  # the record that travels carries none


def test_the_ray_executor_without_ray_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(UserError, match=r"pip install 'gem-eval\[ray\]'"):
        asyncio.run(RayExecutor(coder).start([ModelSpec(name="m")]))


def test_an_unknown_executor_is_one_line() -> None:
    with pytest.raises(UserError, match="unknown executor 'spark'"):
        check_executor("spark", None)
    with pytest.raises(UserError, match="--ray-address goes with --executor ray"):
        check_executor("local", "10.0.0.1:6379")
    assert check_executor("ray", None) and not check_executor("local", None)
