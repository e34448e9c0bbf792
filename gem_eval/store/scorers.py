"""Which scorer graded each task of a run, and which agent played it, as leaderboards,
``compare`` and the gate name them.

A score means what its scorer made of an episode: a ``success`` (0 or 1) and a ``return``
(a sum of rewards) of the same episode are different numbers, never to be averaged or
paired. The index keeps each run's map from task id to scorer label
(:func:`task_scorers`), and every episode row carries its task's label.

A label is the task's ``scorer`` (:class:`~gem_eval.records.TaskSpec`), with what changes
its numbers after a colon: the judge model of ``judge``, the discount of
``discounted_return`` (``discounted_return:0.99``). An imported run is scored by its
source harness: ``inspect_ai:<its first scorer>``, ``lm-eval:<metric,filter>``,
``harbor:reward``.

An episode's agent is the one that played it, as its record says
(:func:`episode_agent`: a ``--resume --agent X --force`` plays the episodes left with
another agent than the run's first ones); where the record does not say, the task's
``agent`` (:func:`task_agents`; gem-eval's own loop,
:data:`~gem_eval.records.DEFAULT_AGENT`, in a run made before tasks had one). Like a model,
it is not part of what a sample is: runs of two agents on the same samples compare. An
imported run was played by its source harness: ``inspect_ai``, ``lm-eval``, ``harbor``
(``harbor:terminus-2`` when the job ran one agent).
"""

from __future__ import annotations

from typing import Any, Protocol

from gem_eval.records import DEFAULT_AGENT, RunManifest, TaskSpec

__all__ = [
    "episode_agent",
    "rescore_scorer",
    "scorer_label",
    "scorer_name",
    "task_agents",
    "task_scorers",
]


class PlayedTrajectory(Protocol):
    """What :func:`episode_agent` reads of a trajectory."""

    @property
    def agent(self) -> str | None: ...

    @property
    def initial_observation(self) -> str: ...


def scorer_label(task: TaskSpec) -> str:
    """The label of the scorer that grades ``task`` in a gem-eval run."""
    if task.scorer == "judge" and task.judge is not None:
        return f"judge:{task.judge.model}"
    if task.scorer == "discounted_return":
        return f"discounted_return:{task.gamma:g}"
    return task.scorer


def scorer_name(label: str) -> str:
    """The scorer's name in a label, without its detail: ``judge:openai/x`` -> ``judge``."""
    return label.split(":", 1)[0]


def task_scorers(manifest: RunManifest) -> dict[str, str]:
    """Task id -> scorer label, for every task of the run."""
    imported = manifest.extra.get("imported")
    if isinstance(imported, dict):
        return {t.id: _imported_label(imported, t.id) for t in manifest.tasks}
    return {t.id: scorer_label(t) for t in manifest.tasks}


def task_agents(manifest: RunManifest) -> dict[str, str]:
    """Task id -> the agent that played it, for every task of the run."""
    imported = manifest.extra.get("imported")
    if isinstance(imported, dict):
        return dict.fromkeys((t.id for t in manifest.tasks), _imported_agent(imported))
    return {t.id: t.agent for t in manifest.tasks}


def episode_agent(trajectory: PlayedTrajectory | None) -> str | None:
    """The agent a record says played its episode: its trajectory's ``agent``, or
    gem-eval's own loop for a trajectory the loop played (it reset the env); ``None``
    when the record does not say (no trajectory, or an episode that failed before it
    began): the task's agent then (:func:`task_agents`). Not for an imported run: its
    harness played it."""
    if trajectory is None:
        return None
    if trajectory.agent:
        return trajectory.agent
    return DEFAULT_AGENT if trajectory.initial_observation else None


def rescore_scorer(manifest: RunManifest) -> str | None:
    """The scorer ``gem-eval rescore --scorer`` asked for when it made this run (``None``:
    not a re-scoring, or each task's own scorer was kept)."""
    origin = manifest.extra.get("rescored_from")
    scorer = origin.get("scorer") if isinstance(origin, dict) else None
    return str(scorer) if scorer else None


def _imported_label(imported: dict[str, Any], task_id: str) -> str:
    source = str(imported.get("source") or "imported")
    metrics = imported.get("metrics")
    detail = (
        metrics.get(task_id)
        if isinstance(metrics, dict)
        else imported.get("scorer") or ("reward" if source == "harbor" else None)
    )
    return f"{source}:{detail}" if detail else source


def _imported_agent(imported: dict[str, Any]) -> str:
    source = str(imported.get("source") or "imported")
    pairs = imported.get("agents")  # harbor's, as "agent:model"
    names = {str(p).split(":", 1)[0] for p in pairs} if isinstance(pairs, list) else set()
    return f"{source}:{names.pop()}" if len(names) == 1 else source
