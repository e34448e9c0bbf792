"""The agents that played a run, as its records tell: per agent, its episodes, versions
and mean setup and run times (an agent program's ``agent_run``), for ``results show``.

An episode's agent is the one its record names (:func:`~gem_eval.store.scorers.episode_agent`),
else its task's; a run resumed with ``--agent X --force`` was played by two.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from statistics import fmean

from gem_eval.records import DEFAULT_AGENT, EpisodeRecord, RunManifest
from gem_eval.store.scorers import episode_agent, task_agents

__all__ = ["AgentPlay", "run_agents"]


@dataclass(frozen=True)
class AgentPlay:
    """What one agent played of a run.

    Attributes:
        agent: Its name (``gem-eval``: gem-eval's own loop).
        episodes: The episodes it played (the last record of each).
        versions: The versions it reported, sorted (none for gem-eval's own loop).
        setup_s: Its mean setup time over the episodes that report one.
        run_s: Its mean run time over the episodes that report one.
    """

    agent: str
    episodes: int
    versions: tuple[str, ...] = ()
    setup_s: float | None = None
    run_s: float | None = None


def run_agents(manifest: RunManifest, records: Iterable[EpisodeRecord]) -> list[AgentPlay]:
    """The agents of a run's episodes (``records``: the last of each), and of its tasks
    not played yet (with no episodes), by name."""
    tasks = task_agents(manifest)
    imported = isinstance(manifest.extra.get("imported"), dict)  # its harness played it
    played: dict[str, list[EpisodeRecord]] = {}
    for record in records:
        own = None if imported else episode_agent(record.trajectory)
        agent = own or tasks.get(record.task_id) or DEFAULT_AGENT
        played.setdefault(agent, []).append(record)
    started = {r.task_id for group in played.values() for r in group}
    for task, agent in tasks.items():
        if task not in started:
            played.setdefault(agent, [])
    return [_play(agent, group) for agent, group in sorted(played.items())]


def _play(agent: str, records: list[EpisodeRecord]) -> AgentPlay:
    reports = [r.trajectory.agent_run or {} for r in records if r.trajectory is not None]
    versions = {str(run["version"]) for run in reports if run.get("version")}

    def mean(key: str) -> float | None:
        values = [float(run[key]) for run in reports if run.get(key) is not None]
        return fmean(values) if values else None

    return AgentPlay(agent, len(records), tuple(sorted(versions)), mean("setup_s"), mean("run_s"))
