"""Import other harnesses' results into the store: inspect_ai logs, Harbor job directories
and lm-evaluation-harness output become runs beside gem-eval's own, so that one leaderboard
spans them and ``compare`` pairs their samples.

* :mod:`~gem_eval.store.importers.inspect` -- ``.eval`` / ``.json`` logs of inspect_ai;
* :mod:`~gem_eval.store.importers.harbor` -- Harbor job directories (trial ``result.json``
  and ATIF ``agent/trajectory.json``);
* :mod:`~gem_eval.store.importers.lm_eval` -- ``results_<date>.json`` with its
  ``samples_<task>_<date>.jsonl``.

An imported run's manifest carries ``extra["imported"] = {"source", "path", "version",
...}``. Its ``suite_hash`` is a hash of the source kind, the task(s) and the sample ids (lm-eval:
and each document's hash; Harbor: each task's checksum), so two imports of the same task by
different models hash the same, as two gem-eval runs of one suite do; ``compare`` pairs
episodes on ``(task_id, sample, epoch)``, with string sample ids turned into stable numbers
(see :func:`~gem_eval.store.importers._common.sample_number`). The run id is made from the
source's start time, the suite and a hash of the source's bytes: importing the same log
again creates nothing.

What cannot be read is left out when the rest can be: a log, results file or Harbor job
(or a trial inside a job) that is unreadable, malformed or of an unknown format version is
skipped and named in one line given to the caller's ``warn``; the import fails only when
nothing could be read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

from gem_eval.errors import UserError
from gem_eval.store.importers._common import SOURCES, ImportedRun, Source, skip_line

__all__ = ["SOURCES", "ImportedRun", "Source", "import_results", "read_runs"]

_ALIASES: dict[str, Source] = {
    "inspect": "inspect_ai",
    "inspect_ai": "inspect_ai",
    "harbor": "harbor",
    "lm-eval": "lm-eval",
    "lm_eval": "lm-eval",
}


def import_results(
    path: str | Path,
    results_dir: str | Path,
    *,
    source: str | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> list[str]:
    """Import the results at ``path`` into the store at ``results_dir``.

    Args:
        path: An inspect_ai log (``.eval``/``.json``), a Harbor job directory (or a
            directory of jobs), an lm-eval ``results_*.json`` or ``samples_*.jsonl``, or a
            directory holding any of these.
        results_dir: The results directory (created when missing).
        source: ``inspect``, ``harbor`` or ``lm-eval``; default: told from ``path``.
        warn: Called with one line for each part of ``path`` left out because it cannot
            be read (see :func:`read_runs`).

    Returns:
        The ids of the new runs. Runs already imported (the same bytes) are skipped.

    Raises:
        UserError: ``path`` holds nothing importable, or nothing of it can be read (one
            line naming the file, and the line for JSONL), or everything in it was
            imported before.
    """
    runs = read_runs(path, source=source, warn=warn)
    results_dir = Path(results_dir)
    new, old = [], []
    for run in runs:
        if (results_dir / run.run_id).exists():
            old.append(run.run_id)
        else:
            _write(run, results_dir)
            new.append(run.run_id)
    if not new:
        raise UserError(f"{path}: already imported as run {', '.join(old)}")
    return new


def read_runs(
    path: str | Path,
    *,
    source: str | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> list[ImportedRun]:
    """The runs at ``path`` (see :func:`import_results`), read but not written.

    Each log, results file and Harbor job is read on its own: one that cannot be read is
    left out and named in a line given to ``warn`` (after all are read, and only when
    another one could be read), as is each trial left out of a job it imports.

    Raises:
        UserError: Nothing importable there, or none of it readable (then the one reason,
            or the count and the first).
    """
    from gem_eval.store.importers import harbor, inspect, lm_eval

    wanted = _source(source)
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    runs: list[ImportedRun] = []
    unreadable: list[tuple[Path, UserError]] = []

    def read_each(found: Iterable[Path], reader: Callable[[Path], ImportedRun]) -> None:
        for one in found:
            try:
                runs.append(reader(one))
            except UserError as exc:
                unreadable.append((one, exc))

    # A directory may hold several kinds (a folder of Harbor jobs beside inspect_ai logs):
    # each is read once, and no file inside a Harbor job is read as another kind.
    taken: list[Path] = []
    if wanted in (None, "harbor"):
        jobs = harbor.find_jobs(path)
        read_each(jobs, harbor.read)
        taken += jobs
    lm_eval_path = path.is_dir() or lm_eval.is_results(path) or wanted == "lm-eval"
    if wanted in (None, "lm-eval") and (path.is_dir() or not taken) and lm_eval_path:
        found = [p for p in lm_eval.find_results(path) if not _inside(p, taken)]
        read_each(found, lm_eval.read)
        taken += found
    if wanted in (None, "inspect_ai") and (path.is_dir() or not taken):
        if path.is_dir():
            logs = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and not _inside(p, taken) and inspect.is_log(p)
            )
        else:
            logs = [path] if wanted or inspect.is_log(path) else []
        read_each(logs, inspect.read)
    if not runs and unreadable:
        if len(unreadable) == 1:
            raise unreadable[0][1]
        first, exc = unreadable[0]
        raise UserError(
            f"{path}: none of {len(unreadable)} could be read; the first, {first}: {exc}"
        )
    if not runs:
        kinds = "inspect_ai log, Harbor job directory or lm-eval results"
        raise UserError(f"{path}: found no {_NAMES.get(wanted or '', kinds)} to import")
    for one, exc in unreadable:
        warn(skip_line(one, exc))
    for run in runs:
        for line in run.skipped:
            warn(line)
    return runs


_NAMES = {
    "inspect_ai": "inspect_ai log (.eval or .json)",
    "harbor": "Harbor job directory (trial directories with result.json)",
    "lm-eval": "lm-eval results_<date>.json",
}


def _inside(path: Path, folders: list[Path]) -> bool:
    return any(path.is_relative_to(folder) for folder in folders)


def _source(source: str | None) -> Source | None:
    if source is None:
        return None
    if source not in _ALIASES:
        raise UserError(f"unknown source {source!r}: choose inspect, harbor or lm-eval")
    return _ALIASES[source]


def _write(run: ImportedRun, results_dir: Path) -> None:
    """Write a run as gem-eval writes its own: the run directory first (the source of
    truth), then the index, a cache that ``gem-eval results reindex`` rebuilds."""
    from gem_eval.store import INDEX_FILE, Index, RunDir

    records = run.records()
    missing = not (results_dir / INDEX_FILE).exists()
    run_dir = RunDir.create(results_dir, run.manifest())
    run_dir.extend(records)
    try:
        with Index.for_root(results_dir) as index:
            if missing:  # a new index holds every run under it, not only this one
                index.rebuild(results_dir)
            else:
                index.sync_run(run_dir)
    except sqlite3.Error:
        pass  # the run directory holds everything; the index catches up on reindex
