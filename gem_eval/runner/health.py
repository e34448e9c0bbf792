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

``tasks check SUITE --agent NAME`` also checks that the agent program can play every
task, as a second recorded run: the agent is set up and run in each task's container
against the do-nothing model (``noop`` answers "Done." to every call, which the agent
gets through the run's endpoint: Terminus-2 answers it with a parse error and asks
again), its turns capped at :data:`AGENT_CHECK_TURNS` (the task's ``agent_max_turns``).
It passes when the agent set up, ran to its end within the task's time, called the
model, and scored 0 (see :class:`AgentCheck`); the task's health is the reference
agents' alone.

Both runs are marked (``extra["tasks_check"]``, see :mod:`gem_eval.store.variant`): they
score no model, so the default leaderboard leaves them out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
from gem_eval.store.variant import TASKS_CHECK

if TYPE_CHECKING:
    from gem_eval.suites import Suite

AGENTS = ("oracle", "noop")
AGENT_CHECK_TURNS = 3
"""The turns an agent program gets against the do-nothing model (``tasks check
--agent``): enough to see it set up, call the model, take the reply and ask again; the
do-nothing model never ends a task in the agent's terms, so without a cap it would ask
until its own limit (Terminus-2 has none but the task's time)."""


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
    agent: AgentCheck | None = None
    """How ``--agent``'s program did in the task's container (``None``: not asked)."""

    @property
    def healthy(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class AgentCheck:
    """How an agent program did in one task's container against the do-nothing model.

    Attributes:
        reward: Its episode's reward (``None``: not played to a score).
        calls: The model calls it made.
        setup_s: Its setup time (installing, starting), when it got that far.
        run_s: Its run time.
        problem: Why it cannot play the task (it did not set up, failed, did not end in
            the task's time, never called the model, or scored without doing anything);
            ``None``: it can.
    """

    reward: float | None
    calls: int
    setup_s: float | None
    run_s: float | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class HealthReport:
    """What ``tasks check`` found.

    Attributes:
        run_id: The reference agents' run.
        tasks: Each task's health (and its agent check), in the suite's order.
        agent: The agent program checked (``--agent``), if any.
        agent_run_id: Its run.
    """

    run_id: str
    tasks: list[TaskHealth]
    agent: str | None = None
    agent_run_id: str | None = None

    @property
    def broken(self) -> list[TaskHealth]:
        """The tasks that are broken, or that the agent cannot play."""
        return [h for h in self.tasks if not h.healthy or (h.agent is not None and not h.agent.ok)]


async def check_tasks(
    suite: str | Suite,
    results_dir: Path,
    options: RunOptions,
    sinks: Sequence[Callable[[EpisodeRecord], None]] = (),
    on_plan: Callable[[PlannedRun], None] | None = None,
    on_ray: bool = False,
    ray_address: str | None = None,
    agent: str | None = None,
) -> HealthReport:
    """Play ``suite`` with the reference agents, then (``agent``) the agent program
    against the do-nothing model, each as a run of its own; what was found.

    Args:
        on_plan: Hears each run before it plays (the agent's run: its manifest's
            ``extra["agent_check"]`` names the agent).
        on_ray: On a Ray cluster, as :func:`~gem_eval.runner.session.execute_run`.
        agent: The agent program to check (``--agent``).

    Raises:
        UserError: ``agent`` is unknown or cannot play a task (before any episode).
    """
    if agent is not None and isinstance(suite, str):
        from gem_eval.suites import load_suite

        suite = load_suite(suite)  # loaded once for both runs
    plan = plan_run(suite, [ModelSpec(name=name) for name in AGENTS], options, results_dir)
    plan.manifest.extra[TASKS_CHECK] = {"models": list(AGENTS)}
    without = _drop_oracle_without_reference(plan)
    # Planned now, so an agent that cannot play a task is refused before any episode.
    agent_plan = None if agent is None else _agent_plan(suite, agent, options, results_dir)
    if agent_plan is not None:
        agent_plan.manifest.extra["agent_check"]["health_run"] = plan.manifest.run_id
    for planned in (plan, agent_plan):
        if planned is None:
            continue
        if on_plan is not None:
            on_plan(planned)
        await execute_run(
            planned,
            sinks=sinks,
            model_factory=_reference_agent,
            on_ray=on_ray,
            ray_address=ray_address,
        )
    records = _last_records(plan)
    tasks = list(dict.fromkeys(spec.id for spec in plan.manifest.tasks))
    health = [
        _health(task, records.get((task, "oracle")), records.get((task, "noop")), task in without)
        for task in tasks
    ]
    if agent_plan is None:
        return HealthReport(plan.manifest.run_id, health)
    played = _last_records(agent_plan)
    return HealthReport(
        plan.manifest.run_id,
        [replace(h, agent=_agent_check(played.get((h.task_id, "noop")))) for h in health],
        agent=agent_plan.manifest.extra["agent_check"]["agent"],
        agent_run_id=agent_plan.manifest.run_id,
    )


def _agent_plan(
    suite: str | Suite, agent: str, options: RunOptions, results_dir: Path
) -> PlannedRun:
    """The agent program's run: every task played by ``agent`` against the do-nothing
    model, its turns capped at :data:`AGENT_CHECK_TURNS`."""
    from gem_eval.agents.registry import agent_info

    name = agent_info(agent).name  # an unknown name: one line
    overrides = {**options.overrides, "agent": name, "agent_max_turns": AGENT_CHECK_TURNS}
    checked = replace(options, overrides=overrides)
    plan = plan_run(suite, [ModelSpec(name="noop")], checked, results_dir)
    plan.manifest.extra["agent_check"] = {"agent": name, "max_turns": AGENT_CHECK_TURNS}
    plan.manifest.extra[TASKS_CHECK] = {"models": ["noop"], "agent": name}
    return plan


def _last_records(plan: PlannedRun) -> dict[tuple[str, str], EpisodeRecord]:
    """The run's records by (task, model): the last attempt of each."""
    return {(r.task_id, r.model): r for r in plan.run_dir.records()}


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


def _agent_check(record: EpisodeRecord | None) -> AgentCheck:
    """What the agent's episode against the do-nothing model shows (see
    :class:`AgentCheck`)."""
    if record is None:
        return AgentCheck(None, 0, None, None, "not played")
    traj = record.trajectory
    run = (traj.agent_run if traj is not None else None) or {}
    steps = traj.steps if traj is not None else []
    calls = sum("request" in step.info for step in steps)  # the graded end may add one
    times = {k: float(run[k]) if run.get(k) is not None else None for k in ("setup_s", "run_s")}
    reward = _reward(record) if record.scored and traj is not None else None
    problem = None
    if not record.scored or traj is None:
        problem = f"{record.outcome}: {_error(record)}"
    elif traj.error:  # it failed on its own, and was graded as it left the sandbox
        problem = f"it failed: {' '.join(traj.error.split())[:300]}"
    elif traj.truncated_by is not None:
        problem = f"it did not end within the task's time ({traj.truncated_by})"
    elif calls == 0:
        problem = "it never called the model"
    elif record.success or (reward is not None and reward > 0):
        problem = f"it scored {reward or 0:g} without doing anything: {_detail(record)}"
    return AgentCheck(reward, calls, times["setup_s"], times["run_s"], problem)


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
