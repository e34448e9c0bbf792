"""The run a re-scoring writes (:mod:`gem_eval.runner.rescore`): its manifest, its
records (copies carry their attached files along), and how it is closed.

The new run is a run like any other (``results/<run-id>/``, indexed), with the recorded
run's suite, suite hash, models and episode keys, so that leaderboards and ``compare``
put the two side by side; ``extra["rescored_from"]`` says where it came from and what
the re-scoring did.
"""

from __future__ import annotations

import platform
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from gem_eval._version import __version__
from gem_eval.records import EpisodeRecord, RunManifest, RunStatus, TaskSpec
from gem_eval.store import Index, RunDir

ORIGIN = "rescored_from"
"""The manifest's ``extra`` key of a re-scored run: the recorded run's id, the scorer
and judge asked for, the gem-eval version that graded it first, and the counts."""

Progress = Callable[[int, int], None]
"""Hears ``(episodes written, episodes in all)`` after each record of the new run."""


def new_manifest(
    old: RunManifest, run_id: str, tasks: list[TaskSpec], origin: dict[str, Any]
) -> RunManifest:
    """The manifest of ``old`` re-scored as run ``run_id`` with ``tasks``."""
    from gem_eval.runner.session import git_commit

    return old.model_copy(
        update={
            "run_id": run_id,
            "tasks": tasks,
            "gem_eval_version": __version__,
            "git_commit": git_commit(),
            "host": platform.node(),
            "started_at": time.time(),
            "finished_at": None,
            "status": "running",
            "error": None,
            "sessions": [],
            "extra": {**old.extra, ORIGIN: origin},
        },
        deep=True,
    )


class RecordWriter:
    """Appends the new run's records and reports progress.

    Args:
        new: The new run.
        source: The recorded run (where copied records' attachments are).
        total: The records the new run will hold.
        progress: Hears progress (see :data:`Progress`).

    Attributes:
        keys: The episode keys written so far.
    """

    def __init__(self, new: RunDir, source: RunDir, total: int, progress: Progress | None) -> None:
        self.new, self.source, self.total, self.progress = new, source, total, progress
        self.keys: set[str] = set()

    def copy_all(self, records: Iterable[EpisodeRecord]) -> None:
        """Copy recorded records into the new run, in one write."""
        batch = [self._copy(r) for r in records]
        self.new.extend(batch)
        self._advance(batch)

    def copy(self, record: EpisodeRecord) -> None:
        """Copy one recorded record into the new run."""
        self.add(self._copy(record))

    def add(self, record: EpisodeRecord) -> None:
        """Append a record of the new run."""
        self.new.append(record)
        self._advance([record])

    def _copy(self, record: EpisodeRecord) -> EpisodeRecord:
        out = record.model_copy(update={"run_id": self.new.run_id, "attachments": []})
        out.take_files()  # a shallow copy shares the pending files: start afresh
        files = {}
        for name in record.attachments:
            path = self.source.path / name
            if path.is_file():
                files[Path(name).name] = path.read_text()
        out.attach(files)
        return out

    def _advance(self, records: list[EpisodeRecord]) -> None:
        self.keys.update(r.key for r in records)
        if self.progress is not None and records:
            self.progress(len(self.keys), self.total)


def close_run(new: RunDir, status: RunStatus, facts: dict[str, Any]) -> RunStatus:
    """Write the new run's end: its status (``incomplete`` when it holds unscored
    episodes, which ``gem-eval run --resume`` plays), ``facts`` added to its origin,
    and its index entry. Returns the status written."""
    records = new.latest_by_key().values()
    if status == "finished" and any(not r.scored for r in records):
        status = "incomplete"
    manifest = new.read_manifest()
    manifest.status, manifest.finished_at = status, time.time()
    manifest.extra[ORIGIN] |= facts
    new.write_manifest(manifest)
    try:
        with Index.for_root(new.path.parent) as index:
            index.sync_run(new)
    except sqlite3.Error:
        pass  # the run directory holds everything; `results reindex` rebuilds the index
    return status


def mean_scores(records: Iterable[EpisodeRecord]) -> dict[str, float | None]:
    """The mean score of each model over its scored episodes (``None``: none scored)."""
    scores: dict[str, list[float]] = {}
    for r in records:
        scores.setdefault(r.model, [])
        if r.scored and r.score is not None:
            scores[r.model].append(r.score)
    return {m: (sum(s) / len(s) if s else None) for m, s in scores.items()}
