"""Wrappers: each changes one aspect of an env."""

from __future__ import annotations

from gem_eval.returns import discounted_return
from gem_eval.wrappers.chat_history import ChatHistory
from gem_eval.wrappers.episode_stats import EpisodeStats
from gem_eval.wrappers.max_turns import MaxTurns
from gem_eval.wrappers.tool_env import ToolEnv

__all__ = ["ChatHistory", "EpisodeStats", "MaxTurns", "ToolEnv", "discounted_return"]
