"""Re-scoring: grade a recorded run's episodes again without calling the model.

``rescore_run`` writes a new run (the original is never touched) with the same suite,
suite hash, models and episode keys (see :mod:`gem_eval.runner.rescored_run`). For the
last record of each episode:

* not played to its end (``infra_error``, ``cancelled`` ...): copied as it is; it is
  still to be played (``gem-eval run --resume NEW_RUN`` plays it, with the model); one
  whose judge failed (``judge_error``) was played: it is replayed and judged again;
* a hosted task's (terminal, MCP): graded on the final state of its container, which is
  not kept, so it cannot be re-scored: copied with its score and reported;
* otherwise replayed through a fresh env, the same tools and the same agent loop, the
  model's recorded outputs answering each turn (:mod:`gem_eval.runner.replay`), and
  scored with the task's scorer or ``scorer`` (a judge, for tasks scored by one, is
  called: only the judged models are not). A replay that leaves the recorded episode
  (the env asks for another turn, or says something else than it did) keeps its old
  score and is reported as diverged; one that fails (no sandbox) keeps it too.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gem_eval.errors import UserError
from gem_eval.judge import JudgeSpec
from gem_eval.outcomes import is_scored
from gem_eval.records import EpisodeRecord, EpisodeSpec, RunManifest, RunStatus, Scorer, TaskSpec
from gem_eval.runner.provision import Provisioner
from gem_eval.runner.replay import ReplayExecutor, divergence, is_hosted
from gem_eval.runner.rescored_run import (
    Progress,
    RecordWriter,
    close_run,
    mean_scores,
    new_manifest,
)
from gem_eval.runner.runner import Runner
from gem_eval.store import RunDir, new_run_id
from gem_eval.store.variant import played_at


@dataclass
class RescoreSummary:
    """What a re-scoring did.

    Attributes:
        run_id: The new run.
        source_run_id: The run re-scored.
        scorer: The scorer asked for (``None``: each task's own).
        judge: The judge model asked for (``None``: each judged task's own).
        regraded: Episodes replayed and graded again.
        changed: Of those, the ones whose score differs from the recorded one.
        kept_hosted: Hosted tasks' episodes, by env family, copied with their score.
        not_scored: Episodes not scored in the original run, copied (still to play).
        diverged: Episodes whose replay left the record (key -> why): old score kept.
        failed: Episodes whose replay could not be played (key -> outcome and error):
            old score kept.
        old_means, new_means: Mean score per model over the scored episodes.
        status: The new run's status.
    """

    run_id: str
    source_run_id: str
    scorer: str | None
    judge: str | None = None
    regraded: int = 0
    changed: int = 0
    kept_hosted: Counter[str] = field(default_factory=Counter)
    not_scored: int = 0
    diverged: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    old_means: dict[str, float | None] = field(default_factory=dict)
    new_means: dict[str, float | None] = field(default_factory=dict)
    status: RunStatus = "running"


async def rescore_run(
    results_dir: str | os.PathLike[str],
    run_id: str,
    *,
    scorer: Scorer | None = None,
    judge: JudgeSpec | None = None,
    concurrency: int = 8,
    progress: Progress | None = None,
) -> RescoreSummary:
    """Grade the episodes of run ``run_id`` (or ``latest``) again, into a new run.

    Args:
        results_dir: The results directory holding the run.
        run_id: The run to re-score.
        scorer: Score every task with this scorer instead of its own.
        judge: The judge of the tasks scored by a judge, instead of their own (a judge
            model is called: only the judged models are not).
        concurrency: Episodes replayed at once.
        progress: Hears progress (see :data:`Progress`).

    Raises:
        UserError: No such run; nothing in it can be re-scored (it was imported, or
            every scored episode is a hosted task's); its suite cannot be loaded; a
            task's tools cannot work here; a task to be judged has no judge.
    """
    source = RunDir.open(results_dir, run_id)
    old = source.read_manifest()
    imported = old.extra.get("imported")
    if isinstance(imported, dict):  # no env of gem-eval's played it: nothing to replay
        raise UserError(
            f"run {old.run_id} was imported from {imported.get('source', 'another harness')}:"
            " its episodes cannot be replayed here"
        )
    records = source.latest_by_key()
    tasks = _retarget(old.tasks, scorer, judge)
    summary = RescoreSummary(new_run_id(old.suite), old.run_id, scorer)
    summary.judge = judge.model if judge is not None else None
    kept, replayed = _sort(records, tasks, summary)
    if not replayed:
        raise UserError(_nothing_to_do(old.run_id, summary))
    specs = _specs(old, tasks, replayed, summary, kept)
    executor = ReplayExecutor(replayed, _provisioner(old, summary.run_id))
    used = list({s.task.id: s.task for s in specs}.values())
    new: RunDir | None = None
    try:
        executor.check(used)
        await executor.start(old.models)
        await executor.prepare(used)
        origin = {
            "run_id": old.run_id,
            "scorer": scorer,
            "judge": summary.judge,
            "gem_eval_version": old.gem_eval_version,
            "played_at": played_at(old),  # its episodes are the original's
        }
        manifest = new_manifest(old, summary.run_id, [tasks[t.id] for t in old.tasks], origin)
        new = RunDir.create(results_dir, manifest)
        write = RecordWriter(new, source, len(records), progress)
        write.copy_all(kept.values())
        runner = Runner(
            summary.run_id,
            executor,
            [lambda r: _settle(r, replayed[r.key], executor, summary, write)],
            concurrency=concurrency,
        )
        result = await runner.run(specs)
        summary.status = "interrupted" if result.status == "interrupted" else "finished"
        # Stopped early (Ctrl-C, or an episode that stops runs): the episodes left keep
        # their recorded grade, so that the new run holds every episode and no `--resume`
        # plays one of them with the model.
        why = "interrupted" if summary.status == "interrupted" else result.stopped_by
        left = [r for k, r in replayed.items() if k not in write.keys]
        for record in left:
            summary.failed[record.key] = f"not replayed: {why}"
        write.copy_all(left)
    except BaseException as exc:
        stopped = isinstance(exc, asyncio.CancelledError | KeyboardInterrupt)
        summary.status = "interrupted" if stopped else "failed"
        raise
    finally:
        await executor.aclose()
        if new is not None:
            summary.status = close_run(new, summary.status, _facts(summary))
            summary.new_means = mean_scores(new.latest_by_key().values())
            summary.old_means = mean_scores(records.values())
    return summary


def _retarget(
    tasks: list[TaskSpec], scorer: Scorer | None, judge: JudgeSpec | None
) -> dict[str, TaskSpec]:
    """The tasks as re-scoring scores them: with ``scorer`` and ``judge`` when given."""
    out = {}
    for task in tasks:
        update: dict[str, Any] = {"scorer": scorer or task.scorer}
        if judge is not None and update["scorer"] == "judge":
            update["judge"] = judge
        elif update["scorer"] == "judge" and task.judge is None:
            raise UserError(f"task {task.id!r} has no judge to score it: give --judge MODEL")
        out[task.id] = task.model_copy(update=update)
    return out


def _sort(
    records: dict[str, EpisodeRecord], tasks: dict[str, TaskSpec], summary: RescoreSummary
) -> tuple[dict[str, EpisodeRecord], dict[str, EpisodeRecord]]:
    """The records copied as they are, and those to replay. An episode is replayed when
    it ended by the model's doing (its trajectory's outcome is scored: a record whose
    judge failed is judged again) and its task is not hosted."""
    kept: dict[str, EpisodeRecord] = {}
    replayed: dict[str, EpisodeRecord] = {}
    for key, record in records.items():
        task = tasks.get(record.task_id)
        played = record.trajectory is not None and is_scored(record.trajectory.outcome)
        if not (record.scored or played):
            summary.not_scored += 1
            kept[key] = record
        elif task is not None and is_hosted(task.env_id):
            summary.kept_hosted[task.env_id.partition(":")[0]] += 1
            kept[key] = record
        elif task is None or not played:
            summary.diverged[key] = "its task or trajectory is not in the record"
            kept[key] = record
        else:
            replayed[key] = record
    return kept, replayed


def _specs(
    old: RunManifest,
    tasks: dict[str, TaskSpec],
    replayed: dict[str, EpisodeRecord],
    summary: RescoreSummary,
    kept: dict[str, EpisodeRecord],
) -> list[EpisodeSpec]:
    """The episodes to replay, as the run planned them (a dataset task's row comes from
    the suite, reloaded), each with the task as the run's manifest holds it; an episode
    the suite no longer has is kept as recorded."""
    from gem_eval.registry.fetch import recorded_registry
    from gem_eval.suites import load_suite

    options: dict[str, Any] = old.extra.get("options", {})
    ref = old.suite_path if old.suite_path and Path(old.suite_path).exists() else old.suite
    try:
        suite = load_suite(ref, registry=recorded_registry(old.extra))
    except UserError as exc:
        raise UserError(f"run {old.run_id} cannot be re-scored: its suite: {exc}") from None
    planned = {
        spec.key: spec
        for spec in suite.episodes(
            list(old.models),
            epochs=options.get("epochs"),
            seed=options.get("seed"),
            overrides=options.get("overrides"),
        )
    }
    out = []
    for key, record in list(replayed.items()):
        spec = planned.get(key)
        if spec is None:
            summary.diverged[key] = "the suite no longer has this episode"
            kept[key] = replayed.pop(key)
            continue
        update = {"task": tasks[record.task_id], "seed": record.seed, "attempt": record.attempt}
        out.append(spec.model_copy(update=update))
    return out


def _provisioner(old: RunManifest, run_id: str) -> Provisioner:
    """Sandboxes as the run had them (``--sandbox``, ``--image-map``, ``--no-network``)."""
    options: dict[str, Any] = old.extra.get("options", {})
    return Provisioner(
        run_id,
        options.get("sandbox"),
        options.get("image_map") or {},
        no_network=bool(options.get("no_network")),
    )


def _settle(
    new: EpisodeRecord,
    old: EpisodeRecord,
    executor: ReplayExecutor,
    summary: RescoreSummary,
    write: RecordWriter,
) -> None:
    """Record one replay: its new grade, or the old record when the replay diverged or
    failed (a replay stopped by Ctrl-C is not recorded)."""
    replay = executor.replays.get(new.key)
    if new.outcome == "cancelled" or replay is None:
        return
    assert old.trajectory is not None
    why = divergence(old.trajectory, new.trajectory, replay) if new.trajectory else None
    if why is not None:
        summary.diverged[new.key] = why
        write.copy(old)
        return
    if not new.scored:
        error = new.trajectory.error if new.trajectory else None
        summary.failed[new.key] = f"{new.outcome}: {error}" if error else new.outcome
        write.copy(old)
        return
    summary.regraded += 1
    summary.changed += new.score != old.score
    if new.trajectory is not None:  # a replay's own timing says nothing of the episode
        new.trajectory.duration_s = old.trajectory.duration_s
        new.trajectory.queued_s = old.trajectory.queued_s
    write.add(
        new.model_copy(
            update={
                "latency_s": old.latency_s,
                "started_at": old.started_at,
                "finished_at": old.finished_at,
            }
        )
    )


def _facts(summary: RescoreSummary) -> dict[str, Any]:
    """What the re-scoring did, for the new run's manifest."""
    return {
        "regraded": summary.regraded,
        "changed": summary.changed,
        "kept_hosted": sum(summary.kept_hosted.values()),
        "not_scored": summary.not_scored,
        "diverged": summary.diverged,
        "failed": summary.failed,
    }


def _nothing_to_do(run_id: str, summary: RescoreSummary) -> str:
    hosted = sum(summary.kept_hosted.values())
    if hosted:
        families = ", ".join(sorted(summary.kept_hosted))
        return (
            f"run {run_id} cannot be re-scored: its {hosted} scored episodes are of hosted "
            f"tasks ({families}), graded on the final container state, which is not kept"
        )
    return f"run {run_id} has no scored episode to re-score"


def hosted_line(summary: RescoreSummary) -> str | None:
    """One line on the hosted tasks' episodes that kept their score, or ``None``."""
    if not summary.kept_hosted:
        return None
    count = sum(summary.kept_hosted.values())
    families = ", ".join(sorted(summary.kept_hosted))
    return (
        f"{count} episodes of {families} tasks keep their score: graded on the final "
        "container state, which is not kept"
    )
