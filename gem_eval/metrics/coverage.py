"""What one run of a comparison played and the other did not: tasks, and samples of a task.

``compare`` and the gate judge the episodes both runs scored. A run of part of a suite
(``--task``, ``--sample``) against a run of all of it is judged on the shared part only:
each gap is named, so that a verdict on half the suite never reads as one on all of it.
Models and agents of one run only are :class:`~gem_eval.metrics.compare.Comparison`'s to
name.
pandas is imported by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pandas as pd

Side = Literal["base", "new"]


@dataclass(frozen=True)
class Gap:
    """Samples of one task that one run played (scored or not) and the other did not.

    Attributes:
        side: The run that played them.
        task_id: The task.
        samples: How many of its samples the other run lacks.
        whole: The other run played none of the task.
        model: The model, when episodes pair on the model (``None`` otherwise).
        agent: The agent, when episodes pair on the agent (``None`` otherwise).
    """

    side: Side
    task_id: str
    samples: int
    whole: bool
    model: str | None = None
    agent: str | None = None

    def line(self) -> str:
        """The gap in one line (``task t2 is in the base run only (10 samples): not
        compared``)."""
        task = f"task {self.task_id}" + (f" of model {self.model}" if self.model else "")
        task += f" played by {self.agent}" if self.agent else ""
        samples = count(self.samples, "sample")
        if self.whole:
            return f"{task} is in the {self.side} run only ({samples}): not compared"
        verb = "is" if self.samples == 1 else "are"
        return f"{task}: {samples} {verb} in the {self.side} run only: not compared"


def count(n: int, noun: str) -> str:
    """``1 sample``, ``2 samples``: a count in words that agree with it."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def find_gaps(base: pd.DataFrame, new: pd.DataFrame, on: Sequence[str]) -> list[Gap]:
    """The gaps between two runs' episode frames paired on ``on`` (``[agent,] [model,]
    task_id, sample, epoch``), base's first, each side by agent, model and task. A sample
    counts as played with any of its epochs; when pairing on the model (the agent), only
    models (agents) both runs played are looked at."""
    keys = [c for c in on if c != "epoch"]
    players = [c for c in ("agent", "model") if c in keys]
    for column in players:
        shared = set(base[column]) & set(new[column])
        base, new = base[base[column].isin(shared)], new[new[column].isin(shared)]
    played = {
        "base": set(base[keys].itertuples(index=False, name=None)),
        "new": set(new[keys].itertuples(index=False, name=None)),
    }
    gaps = []
    sides: tuple[tuple[Side, Side], ...] = (("base", "new"), ("new", "base"))
    for side, other in sides:
        tasks_of_other = {key[:-1] for key in played[other]}
        missing: dict[tuple[object, ...], int] = {}
        for key in played[side] - played[other]:
            missing[key[:-1]] = missing.get(key[:-1], 0) + 1
        for task_key, count in sorted(missing.items(), key=lambda i: tuple(map(str, i[0]))):
            player = {c: str(v) for c, v in zip(players, task_key)}
            gaps.append(
                Gap(
                    side,
                    str(task_key[-1]),
                    count,
                    task_key not in tasks_of_other,
                    player.get("model"),
                    player.get("agent"),
                )
            )
    return gaps
