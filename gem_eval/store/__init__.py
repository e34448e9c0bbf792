"""The embedded results store.

* :class:`RunDir` -- ``results/<run-id>/``: ``manifest.json`` and the append-only
  ``episodes.jsonl``, the source of truth.
* :class:`Index` -- ``results/index.sqlite``: runs and per-episode scores for fast
  leaderboards, rebuildable from the run directories.
"""

from __future__ import annotations

from gem_eval.store.index import INDEX_FILE, Index, RebuildStats, open_results_index
from gem_eval.store.run_dir import (
    EPISODES_FILE,
    MANIFEST_FILE,
    RunDir,
    list_run_ids,
)
from gem_eval.store.run_id import LATEST, check_run_id, new_run_id, resolve_run

__all__ = [
    "EPISODES_FILE",
    "INDEX_FILE",
    "LATEST",
    "MANIFEST_FILE",
    "Index",
    "RebuildStats",
    "RunDir",
    "check_run_id",
    "list_run_ids",
    "new_run_id",
    "open_results_index",
    "resolve_run",
]
