"""The run's model endpoint: agents that are programs call the run's model through it."""

from __future__ import annotations

from gem_eval.endpoint.server import Call, EpisodeLine, ModelEndpoint

__all__ = ["Call", "EpisodeLine", "ModelEndpoint"]
