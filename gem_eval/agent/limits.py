"""Per-episode limits of the agent loop."""

from __future__ import annotations

from dataclasses import dataclass

from gem_eval.models.base import Usage
from gem_eval.trajectory import Limit


@dataclass(frozen=True)
class Limits:
    """When the harness stops an episode (``None``: no limit).

    Attributes:
        max_turns: Model calls per episode.
        max_tokens: Input plus output tokens over all calls.
        max_time_s: Seconds of the episode's own time: wall-clock time less the time it
            waited for a model's connection slot held by other episodes (see
            :mod:`gem_eval.clock`); a model call in flight is cut off at the limit.
        max_cost_usd: Cost over all calls (checked after each call, so the call that
            crosses the limit is the last).
    """

    max_turns: int | None = 50
    max_tokens: int | None = None
    max_time_s: float | None = None
    max_cost_usd: float | None = None

    def exceeded(self, turns: int, usage: Usage, elapsed_s: float) -> Limit | None:
        """The first limit reached by an episode with these totals, if any."""
        if self.max_turns is not None and turns >= self.max_turns:
            return "max_turns"
        if self.max_tokens is not None and usage.total_tokens >= self.max_tokens:
            return "max_tokens"
        if self.max_time_s is not None and elapsed_s >= self.max_time_s:
            return "max_time"
        if self.max_cost_usd is not None and (usage.cost_usd or 0.0) >= self.max_cost_usd:
            return "max_cost"
        return None
