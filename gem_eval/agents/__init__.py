"""Agents other than gem-eval's own loop: ``--agent terminus-2``, installed CLI agents.

See :mod:`gem_eval.agents.base` (the plug-in), :mod:`gem_eval.agents.registry` (the
names) and :mod:`gem_eval.agents.episode` (how an episode is played around one).
"""

from __future__ import annotations

from gem_eval.agents.base import Agent, AgentEpisode, AgentError, AgentResult
from gem_eval.agents.registry import DEFAULT_AGENT, agent_info, all_agents, make_agent

__all__ = [
    "DEFAULT_AGENT",
    "Agent",
    "AgentEpisode",
    "AgentError",
    "AgentResult",
    "agent_info",
    "all_agents",
    "make_agent",
]
