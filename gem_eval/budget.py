"""A run's budget (``--max-cost``): what it may spend and what it has spent so far.

The runner stops scheduling episodes once the budget is spent; the agent loop checks it
before every model call and charges each call's cost after it, so that once the cap is
reached no new call starts anywhere in the run. What can still overshoot the cap is at
most the calls already in flight when it was reached. An episode stopped before a call
is ``cancelled`` (not scored; ``--resume`` with a higher ``--max-cost`` plays it again).

Costs come from the model's price (litellm's map); a call whose price is unknown costs
nothing here. Executors whose episodes run in other processes (Ray) do not share the
object: there the budget holds per episode, from the records.
"""

from __future__ import annotations

import threading


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
