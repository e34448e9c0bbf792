"""The agent loop: a model plays an env, with tools, under limits.

The episode it fills in, :class:`~gem_eval.trajectory.Trajectory`, is a data type one
layer below (``gem_eval.trajectory``), with the file formats that store it.
"""

from __future__ import annotations

from gem_eval.agent.limits import Limits
from gem_eval.agent.loop import run_episode
from gem_eval.agent.redact import Redactor

__all__ = ["Limits", "Redactor", "run_episode"]
