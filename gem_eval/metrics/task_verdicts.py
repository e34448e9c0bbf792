"""The gate's rule applied to each task on its own: which tasks dropped significantly.

``gem-eval gate`` judges the whole run. A CI report wants to point at the tasks that
regressed, so each task (each model's and agent's task, when the comparison pairs on
them) is compared on its own pairs by :func:`~gem_eval.metrics.compare.compare_runs`, with
the gate's level, resamples and seed, and judged by the gate's own rule
(:func:`~gem_eval.metrics.drop.judge_drop`). Each task is a test at ``alpha``, with no
correction for their number: with many tasks, one may fail by chance while the run
passes. The run's verdict is the gate's. pandas is imported by the caller.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from gem_eval.metrics.compare import compare_runs
from gem_eval.metrics.coverage import count
from gem_eval.metrics.drop import judge_drop
from gem_eval.records import DEFAULT_AGENT

if TYPE_CHECKING:
    import pandas as pd

    from gem_eval.metrics.compare import Comparison

NOT_JUDGED = "not judged: the runs are not comparable"

Status = Literal["pass", "fail", "skipped"]


@dataclass(frozen=True)
class TaskVerdict:
    """One task's part of a gate.

    Attributes:
        task_id: The task.
        status: ``fail``: a significant drop beyond ``max_drop``; ``pass``: none;
            ``skipped``: not judged (one run only, no pair scored in both, or runs the
            gate found incomparable).
        reason: The evidence in one line when judged; why not, when skipped.
        model: The model, when the comparison pairs on it (``None`` otherwise).
        agent: The agent, when the comparison pairs on it (``None`` otherwise).
        comparison: The task's own comparison, when both runs scored a pair of it.
        seconds: How long judging it took.
    """

    task_id: str
    status: Status
    reason: str
    model: str | None = None
    agent: str | None = None
    comparison: Comparison | None = None
    seconds: float = 0.0

    @property
    def name(self) -> str:
        """``task``, or ``model / task`` (``agent / model / task``) when the comparison
        pairs on the model (the agent)."""
        return " / ".join(p for p in (self.agent, self.model, self.task_id) if p is not None)


def task_verdicts(
    base: pd.DataFrame,
    new: pd.DataFrame,
    cmp: Comparison,
    max_drop: float,
    alpha: float,
    judged: bool = True,
    n_resamples: int = 2000,
    seed: int = 0,
) -> list[TaskVerdict]:
    """Each task of the two runs' episode frames, judged on its own pairs, in order of
    agent, model and task.

    ``cmp`` is the gate's comparison of the whole runs: tasks are split by the model and
    the agent exactly when it paired on them. A task that one run played and the other
    did not is skipped, as is a task without a pair scored in both runs. With ``judged``
    False (runs the gate found incomparable) each task is compared but skipped.
    """
    players = [c for c in ("agent", "model") if c in cmp.paired_on]
    keys = [*players, "task_id"]
    if "agent" in players:
        base, new = (_with_agent(frame) for frame in (base, new))
    groups = {
        side: {_key(k): g for k, g in frame.groupby(keys, sort=False)}
        for side, frame in (("base", base), ("new", new))
    }
    verdicts = []
    for key in sorted(groups["base"].keys() | groups["new"].keys()):
        started = time.perf_counter()
        who: dict[str, str] = dict(zip(players, key))
        b, n = groups["base"].get(key), groups["new"].get(key)
        if b is not None and n is not None:
            sub = compare_runs(b, n, 1 - 2 * alpha, n_resamples, seed)
            status, reason = _judge(sub, max_drop, alpha, judged)
        else:
            sub, status = None, "skipped"
            side, played, other = ("base", b, new) if n is None else ("new", n, base)
            reason = _one_run_only(side, key[-1], who, played, other)
        verdicts.append(
            TaskVerdict(
                key[-1],
                status,
                reason,
                model=who.get("model"),
                agent=who.get("agent"),
                comparison=sub,
                seconds=time.perf_counter() - started,
            )
        )
    return verdicts


def _judge(sub: Comparison, max_drop: float, alpha: float, judged: bool) -> tuple[Status, str]:
    """A task's status by the gate's rule on its own comparison, and why."""
    if sub.n_pairs == 0:
        return "skipped", "no episode of the task was scored in both runs"
    if not judged:
        return "skipped", NOT_JUDGED
    drop = judge_drop(sub, max_drop, alpha)
    reason = drop.summary
    if sub.gaps:  # samples of the task one run played: the task is judged on the rest
        reason += "; " + "; ".join(gap.line().split(": ", 1)[-1] for gap in sub.gaps)
    if drop.significant:
        return "fail", f"significant drop beyond {max_drop:g} at alpha {alpha:g}: {reason}"
    return "pass", reason


def _one_run_only(
    side: str, task: str, who: dict[str, str], played: pd.DataFrame | None, other: pd.DataFrame
) -> str:
    """Why a task of one run only is skipped: the line names its model (agent) when the
    other run lacks that, else the task."""
    for column, value in who.items():
        if value not in set(map(str, other[column])):
            return f"{column} {value} is in the {side} run only: not compared"
    samples = count(played["sample"].nunique() if played is not None else 0, "sample")
    return f"task {task} is in the {side} run only ({samples}): not compared"


def _key(key: Any) -> tuple[str, ...]:
    return tuple(map(str, key if isinstance(key, tuple) else (key,)))


def _with_agent(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every episode's agent named (gem-eval's own loop when unknown)."""
    named: pd.DataFrame = frame.copy()
    named["agent"] = frame["agent"].fillna(DEFAULT_AGENT) if "agent" in frame else DEFAULT_AGENT
    return named
