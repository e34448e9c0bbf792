"""From a trajectory to an episode's score and record."""

from __future__ import annotations

import time
from typing import Any, Literal

from gem_eval.agent.failures import formatted_traceback
from gem_eval.outcomes import OUTCOMES, is_zeroed
from gem_eval.records import DEFAULT_AGENT, EpisodeRecord, EpisodeSpec, Scorer
from gem_eval.trajectory import Trajectory


def score(trajectory: Trajectory, scorer: Scorer, gamma: float) -> float | None:
    """The episode's score, or ``None`` when it cannot be scored (an infrastructure or
    env failure cut it short: such episodes are excluded, never counted as 0) or, for
    ``judge``, until the judge gives it."""
    if not trajectory.scored:
        return None
    if is_zeroed(trajectory.outcome):  # the agent voided or tampered with its episode
        return 0.0
    if scorer == "success":
        return 1.0 if trajectory.success else 0.0
    if scorer == "judge":  # the judge's to give (gem_eval.runner.judging)
        return None
    if scorer == "return":
        return trajectory.total_return
    return trajectory.discounted_return(gamma)


def to_record(
    run_id: str, spec: EpisodeSpec, trajectory: Trajectory, started_at: float
) -> EpisodeRecord:
    """The record of a played episode."""
    usage = trajectory.usage
    replayed = [s.output.usage for s in trajectory.steps if s.output.replayed]
    return EpisodeRecord(
        **_identity(run_id, spec),
        outcome=trajectory.outcome,
        score=score(trajectory, spec.task.scorer, spec.task.gamma),
        success=trajectory.success and not is_zeroed(trajectory.outcome),
        turns=len(trajectory.steps),
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        latency_s=trajectory.duration_s,
        retries=trajectory.retries,
        replayed_calls=len(replayed),
        replayed_cost_usd=sum(u.cost_usd or 0.0 for u in replayed),
        gave_up=gave_up(spec, trajectory.outcome),
        started_at=started_at,
        finished_at=time.time(),
        trajectory=trajectory,
    )


def gave_up(spec: EpisodeSpec, outcome: str) -> bool:
    """Whether ``--resume`` stops replaying this episode (its last capped attempt)."""
    return spec.last_attempt and OUTCOMES[outcome].capped


def cancelled_record(run_id: str, spec: EpisodeSpec, started_at: float) -> EpisodeRecord:
    """The record of an episode stopped by Ctrl-C: not scored, run again on resume."""
    return _unplayed(run_id, spec, started_at, "cancelled", None)


def failed_record(
    run_id: str,
    spec: EpisodeSpec,
    started_at: float,
    exc: BaseException,
    outcome: Literal["config_error", "infra_error", "env_error", "harness_error"] = "infra_error",
) -> EpisodeRecord:
    """The record of an episode that could not be played (not the model's fault); its
    trajectory names the task's agent program, as a played one does."""
    error = f"{type(exc).__name__}: {exc}"
    trajectory = Trajectory(
        env_id=spec.task.env_id,
        model=spec.model.name,
        seed=spec.seed,
        agent=None if spec.task.agent == DEFAULT_AGENT else spec.task.agent,
        outcome=outcome,
        error=error,
    )
    return _unplayed(run_id, spec, started_at, outcome, trajectory)


def harness_record(
    run_id: str, spec: EpisodeSpec, started_at: float, exc: BaseException
) -> EpisodeRecord:
    """The record of an episode that gem-eval's own code failed (a bug): the traceback
    is kept in its trajectory."""
    record = failed_record(run_id, spec, started_at, exc, outcome="harness_error")
    assert record.trajectory is not None
    record.trajectory.traceback = formatted_traceback(exc)
    return record


def _unplayed(
    run_id: str,
    spec: EpisodeSpec,
    started_at: float,
    outcome: Literal["cancelled", "config_error", "infra_error", "env_error", "harness_error"],
    trajectory: Trajectory | None,
) -> EpisodeRecord:
    return EpisodeRecord(
        **_identity(run_id, spec),
        outcome=outcome,
        score=None,
        success=False,
        turns=0,
        gave_up=gave_up(spec, outcome),
        started_at=started_at,
        finished_at=time.time(),
        trajectory=trajectory,
    )


def _identity(run_id: str, spec: EpisodeSpec) -> dict[str, Any]:
    """The fields that say which episode a record is."""
    return {
        "run_id": run_id,
        "key": spec.key,
        "model": spec.model.name,
        "task_id": spec.task.id,
        "category": spec.task.category,
        "sample": spec.sample,
        "epoch": spec.epoch,
        "seed": spec.seed,
        "attempt": spec.attempt,
    }
