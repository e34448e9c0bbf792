"""The agents ``--agent`` names: gem-eval's own loop (the default) and the programs of
:mod:`gem_eval.agents` (Terminus-2 and installed CLI agents, hosted through Harbor).

Each entry says where the agent comes from, which task families it plays and what
gem-eval records of it; its class is imported only when a run asks for it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gem_eval.errors import UserError, did_you_mean
from gem_eval.records import DEFAULT_AGENT as DEFAULT_AGENT  # gem_eval.agents names it

if TYPE_CHECKING:
    from gem_eval.agents.base import Agent
    from gem_eval.records import TaskSpec


@dataclass(frozen=True)
class AgentInfo:
    """One agent ``--agent`` can name.

    Attributes:
        name: Its name.
        entry: ``module:Class`` of its :class:`~gem_eval.agents.base.Agent` (``None``:
            gem-eval's own loop).
        source: Where it comes from.
        families: The task families (env id prefixes) it plays; empty: every family.
        records: What gem-eval records of its episodes.
    """

    name: str
    entry: str | None
    source: str
    families: tuple[str, ...]
    records: str


AGENTS: dict[str, AgentInfo] = {
    info.name: info
    for info in [
        AgentInfo(
            DEFAULT_AGENT,
            None,
            "built in",
            (),
            "every message, tool call and result, tokens, cost, token ids",
        ),
    ]
}
"""Every agent, by name."""


def register(info: AgentInfo) -> None:
    """Add an agent (a plug-in's, or one of gem-eval's own modules at import)."""
    AGENTS[info.name] = info


def agent_info(name: str) -> AgentInfo:
    """The agent ``name``.

    Raises:
        UserError: No such agent (the message names the closest and lists them all).
    """
    _load_builtin()
    if name not in AGENTS:
        hint = did_you_mean(name, AGENTS) or f" Agents: {', '.join(AGENTS)}."
        raise UserError(f"unknown agent {name!r}.{hint}")
    return AGENTS[name]


def all_agents() -> list[AgentInfo]:
    """Every agent, gem-eval's own loop first."""
    _load_builtin()
    return list(AGENTS.values())


def make_agent(name: str) -> Agent:
    """An instance of the agent ``name`` (not gem-eval's own loop)."""
    info = agent_info(name)
    if info.entry is None:
        raise ValueError(f"{name} is gem-eval's own loop, not an agent program")
    module, _, attr = info.entry.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    agent: Agent = cls()
    return agent


def check_agents(tasks: list[TaskSpec]) -> None:
    """Refuse, in one line, tasks whose agent cannot play them (before any episode).

    Raises:
        UserError: Naming the agent, the task and the families the agent plays.
    """
    for task in tasks:
        info = agent_info(task.agent)
        family = task.env_id.split(":", 1)[0]
        if info.families and family not in info.families:
            raise UserError(
                f"agent {info.name!r} cannot play task {task.id!r} ({family} tasks): it "
                f"plays {', '.join(info.families)} tasks; choose another --agent or task"
            )


def _load_builtin() -> None:
    """The entries of gem-eval's agent programs (registered by their package)."""
    importlib.import_module("gem_eval.agents.catalog")
