"""A run's budget (``--max-cost``): what it may spend, what it has spent so far, and what
an episode is expected to cost.

The runner starts an episode only when its expected cost fits in what is left once the
episodes in flight have had theirs (:class:`Forecast`): near the cap it stops starting
episodes, so that those in flight finish and are scored rather than all being cut
mid-way. An episode's expected cost is the mean cost of the episodes of its model and
task that ran to their end (this run's, earlier sessions' included), else of its model's;
before any, the model's episodes start one at a time until one has finished (a probe).
The runner stops scheduling episodes once the budget is spent; the agent loop checks it
before every model call and charges each call's cost after it, so that once the cap is
reached no new call starts anywhere in the run. What can still overshoot the cap is at
most the calls already in flight when it was reached. An episode stopped before a call
is ``cancelled`` (not scored; ``--resume`` with a higher ``--max-cost`` plays it on from
the calls it made, replayed from its record and not counted again: see
:mod:`gem_eval.models.paid_replies`).

Costs come from the model's price (litellm's map); a call whose price is unknown costs
nothing here. Executors whose episodes run in other processes (Ray) do not share the
object: there the budget holds per episode, from the records.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class Budget:
    """What a run may spend (``cap``, ``None``: no limit) and has spent (thread-safe).

    Args:
        cap: The most the run may cost, in USD.
        spent: What it cost before (earlier sessions of a resumed run).
    """

    def __init__(self, cap: float | None, spent: float = 0.0) -> None:
        self.cap = cap
        self._spent = spent
        self._lock = threading.Lock()

    @property
    def spent(self) -> float:
        return self._spent

    @property
    def exhausted(self) -> bool:
        """Whether no new model call may start."""
        return self.cap is not None and self._spent >= self.cap

    def charge(self, cost_usd: float | None) -> None:
        """Count a finished call's cost (``None``: an unknown price, not counted)."""
        if cost_usd:
            with self._lock:
                self._spent += cost_usd

    def describe(self) -> str:
        return f"the run's --max-cost budget (${self.cap:g}) is spent"


class Forecast:
    """What an episode is expected to cost, learnt from the episodes that ran to their end.

    Args:
        seen: ``(model, task_id, cost_usd)`` of episodes that ran to their end before
            (earlier sessions of a resumed run).
    """

    def __init__(self, seen: Iterable[tuple[str, str, float]] = ()) -> None:
        self._sums: dict[tuple[str, str | None], list[float]] = {}
        for model, task_id, cost in seen:
            self.add(model, task_id, cost)

    def add(self, model: str, task_id: str, cost_usd: float) -> None:
        """Count an episode of ``model`` on ``task_id`` that ran to its end."""
        for key in ((model, task_id), (model, None)):
            total = self._sums.setdefault(key, [0.0, 0.0])
            total[0] += cost_usd
            total[1] += 1

    def expected(self, model: str, task_id: str) -> float | None:
        """The mean cost of ``model``'s episodes on ``task_id``, else on any task;
        ``None`` before any ran to its end."""
        for key in ((model, task_id), (model, None)):
            total = self._sums.get(key)
            if total:
                return total[0] / total[1]
        return None
