"""The agent loop: a model plays an env, with tools, under limits."""

from __future__ import annotations

from gem_eval.agent.limits import Limits
from gem_eval.agent.loop import run_episode
from gem_eval.agent.redact import Redactor
from gem_eval.agent.trajectory import Step, ToolEvent, Trajectory
from gem_eval.outcomes import Outcome

__all__ = ["Limits", "Outcome", "Redactor", "Step", "ToolEvent", "Trajectory", "run_episode"]
