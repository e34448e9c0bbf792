"""Task health: every task's reference must pass and doing nothing must fail.

``gem-eval tasks check SUITE`` plays each task with two reference agents
(:mod:`gem_eval.models.reference`) as one ordinary run (recorded):

* ``oracle`` plays the task's reference (a solution script, a game's oracle move, a
  gold answer): a healthy task gives it success.
* ``noop`` does nothing: a healthy task gives it no reward.

A task that fails either is broken (a wrong test, a solution that no longer works, a
test that passes on the untouched state), and so is one whose episodes could not be
played (an image that does not build, a service that does not start). A task with no
reference (MCPMark's and other published tasks ship none) is checked with the
do-nothing agent only and reported as such: healthy when doing nothing fails.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gem_eval.models.base import Model
from gem_eval.records import EpisodeRecord, ModelSpec
from gem_eval.runner.session import (
    PlannedRun,
    RunOptions,
    default_model_factory,
    execute_run,
    plan_run,
)

if TYPE_CHECKING:
    from gem_eval.suites import Suite

AGENTS = ("oracle", "noop")


@dataclass(frozen=True)
class TaskHealth:
    """How one task did under the reference agents.

    Attributes:
        task_id: The task.
        oracle: The oracle's reward (``None``: not played to a score, or no reference).
        noop: The do-nothing agent's reward.
        problem: Why the task is broken; ``None`` when it is healthy.
        reference: The task has a reference for the oracle to play.
    """

    task_id: str
    oracle: float | None
    noop: float | None
    problem: str | None
    reference: bool = True

    @property
    def healthy(self) -> bool:
        return self.problem is None


async def check_tasks(
    suite: str | Suite,
    results_dir: Path,
    options: RunOptions,
    sinks: Sequence[Callable[[EpisodeRecord], None]] = (),
    on_plan: Callable[[object], None] | None = None,
    on_ray: bool = False,
    ray_address: str | None = None,
) -> tuple[str, list[TaskHealth]]:
    """Play ``suite`` with the reference agents; the run id and each task's health
    (``on_ray``: on a Ray cluster, as :func:`~gem_eval.runner.session.execute_run`)."""
    plan = plan_run(suite, [ModelSpec(name=name) for name in AGENTS], options, results_dir)
    without = _drop_oracle_without_reference(plan)
    if on_plan is not None:
        on_plan(plan)
    await execute_run(
        plan,
        sinks=sinks,
        model_factory=_reference_agent,
        on_ray=on_ray,
        ray_address=ray_address,
    )
    records: dict[tuple[str, str], EpisodeRecord] = {}
    for record in plan.run_dir.records():
        records[(record.task_id, record.model)] = record  # the last attempt of each
    tasks = list(dict.fromkeys(spec.id for spec in plan.manifest.tasks))
    return plan.manifest.run_id, [
        _health(task, records.get((task, "oracle")), records.get((task, "noop")), task in without)
        for task in tasks
    ]


def _drop_oracle_without_reference(plan: PlannedRun) -> set[str]:
    """Leave the oracle out of the tasks it has nothing to play on (the run's manifest
    names them); their ids."""
    from gem_eval.models.reference import lacks_reference

    without = {task.id for task in plan.manifest.tasks if lacks_reference(task)}
    dropped = Counter(
        s.task.id for s in plan.todo if s.model.name == "oracle" and s.task.id in without
    )
    plan.todo = [s for s in plan.todo if not (s.model.name == "oracle" and s.task.id in without)]
    plan.totals -= dropped
    plan.manifest.episodes_planned -= sum(dropped.values())
    plan.manifest.extra["no_reference"] = sorted(without)
    return without


def _reference_agent(spec: ModelSpec) -> Model:
    """The run's agents: the oracle does not refuse the tasks it was left out of. Any
    other model is a ``scorer: judge`` task's judge: a real one, which grades the
    reference answer."""
    from gem_eval.models.reference import NoopModel, OracleModel

    if spec.name not in AGENTS:
        judge: Model = default_model_factory(spec)
        return judge
    return OracleModel(refuse=False) if spec.name == "oracle" else NoopModel()


def _health(
    task: str,
    oracle: EpisodeRecord | None,
    noop: EpisodeRecord | None,
    without_reference: bool = False,
) -> TaskHealth:
    problems = []
    agents = [("oracle", oracle, True)] if not without_reference else []
    for name, record, wanted in [*agents, ("do-nothing", noop, False)]:
        if record is None:
            problems.append(f"{name}: not played")
        elif not record.scored or record.trajectory is None:
            problems.append(f"{name}: {record.outcome}: {_error(record)}")
        elif record.success != wanted or (not wanted and _reward(record) > 0):
            verdict = "failed" if wanted else f"passed (reward {_reward(record):g})"
            problems.append(f"{name} {verdict}: {_detail(record)}")
    played = oracle is not None and oracle.scored and not without_reference
    return TaskHealth(
        task_id=task,
        oracle=_reward(oracle) if played and oracle is not None else None,
        noop=_reward(noop) if noop is not None and noop.scored else None,
        problem="; ".join(problems) or None,
        reference=not without_reference,
    )


def _reward(record: EpisodeRecord) -> float:
    return record.trajectory.total_return if record.trajectory is not None else 0.0


def _error(record: EpisodeRecord) -> str:
    error = record.trajectory.error if record.trajectory is not None else None
    return (error or "no error recorded")[:300]


def _detail(record: EpisodeRecord) -> str:
    """The grader's own words: its error, else the tail of the test output."""
    steps = record.trajectory.steps if record.trajectory is not None else []
    info = steps[-1].info if steps else {}
    text = info.get("verifier_error") or info.get("verify_output") or info.get("test_output")
    if not text and record.trajectory is not None and record.trajectory.truncated_by:
        text = f"stopped by {record.trajectory.truncated_by}"
    return " ".join(str(text or "no details").split())[-300:]
