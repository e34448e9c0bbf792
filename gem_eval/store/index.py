"""The SQLite index of every run and its per-episode scores: ``results/index.sqlite``.

A cache for fast leaderboards across many runs. The run directories are the source of truth
(:mod:`gem_eval.store.run_dir`); :meth:`Index.rebuild` refills the index from them
(``gem-eval results reindex``). WAL mode: one writer process and any number of readers.
Trajectories are never stored here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, create_model

from gem_eval.errors import GemEvalError, UserError
from gem_eval.outcomes import REPLAYED_OUTCOMES
from gem_eval.records import EPISODE_COLUMNS, EpisodeRecord, RunManifest
from gem_eval.store.run_dir import RunDir, list_run_ids
from gem_eval.store.scorers import episode_agent, rescore_scorer, task_agents, task_scorers
from gem_eval.store.variant import is_tasks_check, played_at, run_variant

if TYPE_CHECKING:
    import pandas as pd

INDEX_FILE = "index.sqlite"
INDEX_SCHEMA_VERSION = 7
"""2: episodes have ``attempt`` and ``gave_up``. 3: runs have ``rescored_from``. 4: runs
have ``scorers`` and ``rescore_scorer``. 5: runs have ``variant`` and ``played_at``.
6: runs have ``agents``. 7: episodes have ``agent``, runs ``tasks_check``."""

RUN_COLUMNS = [
    "run_id", "suite", "suite_path", "suite_hash", "models", "episodes_planned", "epochs",
    "seed", "gem_eval_version", "git_commit", "host", "started_at", "finished_at", "status",
    "max_cost_usd", "rescored_from", "rescore_scorer", "scorers", "agents", "variant",
    "played_at", "tasks_check",
]  # fmt: skip
"""The columns of the ``runs`` table; ``models`` holds a JSON list of model names;
``rescored_from`` the run a ``gem-eval rescore`` graded again (``extra.rescored_from``),
``rescore_scorer`` the scorer it asked for (``None``: each task's own); ``scorers`` a JSON
object: task id -> the label of the scorer that graded it (:mod:`gem_eval.store.scorers`),
``agents`` one of task id -> the agent that plays it; ``variant`` the flags that made it
other than the whole suite as written (``None``: it is that), ``played_at`` when its
episodes were played, ``tasks_check`` whether ``gem-eval tasks check`` made it
(:mod:`gem_eval.store.variant`)."""

EPISODE_TABLE = [*EPISODE_COLUMNS, "agent"]
"""The columns of the ``episodes`` table: a record's, and the agent the record says
played it (:func:`~gem_eval.store.scorers.episode_agent`; ``None``: its task's)."""

FRAME_COLUMNS = [*EPISODE_COLUMNS, "suite", "scorer", "agent"]
"""The columns of :meth:`Index.episodes` rows and :meth:`Index.episodes_frame`: an
episode's own, its run's ``suite``, and its task's ``scorer`` label and ``agent`` in that
run."""

_TYPES = {
    "sample": "INTEGER", "epoch": "INTEGER", "success": "INTEGER", "turns": "INTEGER",
    "input_tokens": "INTEGER", "output_tokens": "INTEGER", "retries": "INTEGER",
    "attempt": "INTEGER", "gave_up": "INTEGER",
    "episodes_planned": "INTEGER", "epochs": "INTEGER", "seed": "INTEGER",
    "score": "REAL", "cost_usd": "REAL", "latency_s": "REAL", "started_at": "REAL",
    "finished_at": "REAL", "max_cost_usd": "REAL", "played_at": "REAL",
    "tasks_check": "INTEGER",
}  # fmt: skip


def _upsert(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
    )


def _create(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    typed = ", ".join(f"{c} {_TYPES.get(c, 'TEXT')}" for c in columns)
    return f"CREATE TABLE {table} ({typed}, PRIMARY KEY ({', '.join(key)})) WITHOUT ROWID"


_SCHEMA = [
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    _create("runs", RUN_COLUMNS, ["run_id"]),
    _create("episodes", EPISODE_TABLE, ["run_id", "key"]),
]
_ROW_FIELDS: dict[str, Any] = {
    c: (EpisodeRecord.model_fields[c].annotation, EpisodeRecord.model_fields[c])
    for c in EPISODE_COLUMNS
}


class _Played(BaseModel):
    """What the index reads of a record's trajectory: who played it."""

    agent: str | None = None
    initial_observation: str = ""


_Row = create_model("EpisodeRow", **_ROW_FIELDS, trajectory=(_Played | None, None))
"""The indexed fields of a record, validated as in EpisodeRecord; parsing skips the rest."""
_INSERT_RUN = _upsert("runs", RUN_COLUMNS, ["run_id"])
_INSERT_EPISODE = _upsert("episodes", EPISODE_TABLE, ["run_id", "key"])


@dataclass
class RebuildStats:
    """What :meth:`Index.rebuild` indexed, and the run directories it could not read."""

    runs: int = 0
    episodes: int = 0
    skipped: dict[str, str] = field(default_factory=dict)


class Index:
    """The index at ``path`` (created when missing).

    Args:
        path: Usually ``<results root>/index.sqlite`` (see :meth:`for_root`).
        busy_timeout_s: How long to wait for another process's write lock.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 2.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(
            self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        self._lock = threading.RLock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")  # a cache: durability is the JSONL's
        # Readers check the schema without a write lock; an index of another schema (or a
        # new one) gets fresh tables: it is a cache. One written by an older gem-eval is
        # refilled from the run directories beside it at once, so no run goes missing
        # from leaderboards; a new one is left for its opener (`open_index` rebuilds).
        outdated = False
        if not self._schema_is_current():
            with self._transaction():
                if not self._schema_is_current():
                    outdated = self._has_tables()
                    self._create_tables()
        if outdated:
            self.rebuild(self.path.parent)

    @classmethod
    def for_root(
        cls, results_root: str | os.PathLike[str], *, busy_timeout_s: float = 2.0
    ) -> Index:
        """The index of the results directory ``results_root``."""
        return cls(Path(results_root) / INDEX_FILE, busy_timeout_s=busy_timeout_s)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_run(self, manifest: RunManifest) -> None:
        """Index a run (or update it: the same as :meth:`update_run`)."""
        with self._transaction():
            self._conn.execute(_INSERT_RUN, _run_row(manifest))

    def update_run(self, manifest: RunManifest) -> None:
        """Record a run's new status, end time ... (the same as :meth:`add_run`)."""
        self.add_run(manifest)

    def add_episode(self, record: EpisodeRecord) -> None:
        """Index one episode; a later record of the same key replaces the earlier one."""
        self.add_episodes((record,))

    def add_episodes(self, records: Iterable[EpisodeRecord]) -> int:
        """Index many episodes in one transaction; returns how many."""
        rows = [_episode_row(r) for r in records]
        with self._transaction():
            self._conn.executemany(_INSERT_EPISODE, rows)
        return len(rows)

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, with ``episodes_done`` (recorded with an outcome that
        ``--resume`` would not play again) and ``played_by``: the agents that played its
        episodes, sorted (a task without episodes yet: its agent)."""
        not_done = ", ".join(f"'{o}'" for o in REPLAYED_OUTCOMES)
        sql = (
            f"SELECT {', '.join('r.' + c for c in RUN_COLUMNS)}, "
            "(SELECT COUNT(*) FROM episodes e WHERE e.run_id = r.run_id "
            f"AND e.outcome NOT IN ({not_done})) FROM runs r ORDER BY r.started_at, r.run_id"
        )
        with self._lock:
            rows = self._conn.execute(sql).fetchall()
            pairs = self._conn.execute(
                "SELECT DISTINCT run_id, task_id, agent FROM episodes"
            ).fetchall()
        played: dict[str, list[tuple[str, str | None]]] = {}
        for run_id, task, agent in pairs:
            played.setdefault(run_id, []).append((task, agent))
        out = []
        for row in rows:
            run = dict(zip(RUN_COLUMNS, row))
            run["models"] = json.loads(run["models"])
            run["scorers"] = json.loads(run["scorers"] or "{}")
            run["agents"] = json.loads(run["agents"] or "{}")
            run["tasks_check"] = bool(run["tasks_check"])
            run["played_by"] = _played_by(run["agents"], played.get(run["run_id"], []))
            run["episodes_done"] = row[-1]
            out.append(run)
        return out

    def episodes(
        self, run_ids: list[str] | None = None, suite: str | None = None
    ) -> list[dict[str, Any]]:
        """Episode rows (keys: :data:`FRAME_COLUMNS`) of every run, or only of ``run_ids``
        or of a suite. Which runs a leaderboard shows is
        :mod:`gem_eval.metrics.selection`'s to decide."""
        return [
            {**dict(zip(FRAME_COLUMNS, row)), "success": bool(row[_SUCCESS])}
            for row in self._select(run_ids, suite)
        ]

    def episodes_frame(
        self, run_ids: list[str] | None = None, suite: str | None = None
    ) -> pd.DataFrame:
        """:meth:`episodes` as a pandas DataFrame with columns :data:`FRAME_COLUMNS`.

        Raises:
            UserError: pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError:
            raise UserError("leaderboards need pandas: pip install pandas") from None

        frame: pd.DataFrame = pd.DataFrame(self._select(run_ids, suite), columns=FRAME_COLUMNS)
        frame["success"] = frame["success"].astype(bool)
        frame["gave_up"] = frame["gave_up"].fillna(False).astype(bool)
        for column in _REAL_EPISODE_COLUMNS:  # all-None columns would stay `object`
            frame[column] = frame[column].astype(float)
        return frame

    def sync_run(self, run: RunDir) -> int:
        """Re-index one run from its directory; returns its episode count. The index lags
        the JSONL after a crash between the two writes: resume calls this first.

        Raises:
            GemEvalError: The manifest or the episode log cannot be read.
        """
        manifest, rows = _load(run)
        with self._transaction():
            self._conn.execute("DELETE FROM episodes WHERE run_id = ?", (run.run_id,))
            self._conn.execute(_INSERT_RUN, _run_row(manifest))
            self._conn.executemany(_INSERT_EPISODE, rows)
        return len({row[_KEY] for row in rows})

    def rebuild(self, results_root: str | os.PathLike[str]) -> RebuildStats:
        """Drop everything and re-index every run directory under ``results_root``.

        The files are read first, then written in one transaction: the writer's lock is
        held briefly, and readers see the old index until the new one is complete. Runs
        whose manifest or episode log cannot be read are skipped and reported.
        """
        stats = RebuildStats()
        loaded = []
        for run_id in list_run_ids(results_root):
            try:
                loaded.append(_load(RunDir(Path(results_root) / run_id)))
            except GemEvalError as exc:
                stats.skipped[run_id] = str(exc)
        with self._transaction():
            self._create_tables()
            for manifest, rows in loaded:
                self._conn.execute(_INSERT_RUN, _run_row(manifest))
                self._conn.executemany(_INSERT_EPISODE, rows)
            stats.runs = len(loaded)
            stats.episodes = self._conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        return stats

    def _select(self, run_ids: list[str] | None, suite: str | None) -> list[tuple[Any, ...]]:
        """Rows of :data:`FRAME_COLUMNS`: each episode with its run's suite, and its task's
        scorer label and agent (``None`` for a task the run's manifest does not list)."""
        where, params = [], []
        if run_ids is not None:
            where.append(f"e.run_id IN ({', '.join('?' * len(run_ids))})")
            params.extend(run_ids)
        if suite is not None:
            where.append("r.suite = ?")
            params.append(suite)
        sql = (
            f"SELECT {', '.join('e.' + c for c in EPISODE_COLUMNS)}, r.suite, e.agent, "
            "r.scorers, r.agents FROM episodes e LEFT JOIN runs r ON r.run_id = e.run_id"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY e.run_id, e.key", params).fetchall()
        maps: dict[str | None, dict[str, str]] = {}  # a run's JSON map -> the map, read once
        out = []
        for row in rows:
            *columns, played_by, scorers_text, agents_text = row
            scorers, agents = _task_map(maps, scorers_text), _task_map(maps, agents_text)
            task = row[_TASK]
            out.append((*columns, scorers.get(task), played_by or agents.get(task)))
        return out

    def _has_tables(self) -> bool:
        return (
            self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone()
            is not None
        )

    def _schema_is_current(self) -> bool:
        has_version = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        version = (
            has_version and self._conn.execute("SELECT version FROM schema_version").fetchone()
        )
        columns = [r[1] for r in self._conn.execute("PRAGMA table_info(episodes)")]
        return version == (INDEX_SCHEMA_VERSION,) and columns == EPISODE_TABLE

    def _create_tables(self) -> None:
        """(Re)create the tables, empty. Call inside a transaction."""
        for table in ("schema_version", "runs", "episodes"):
            self._conn.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in _SCHEMA:
            self._conn.execute(statement)
        self._conn.execute("INSERT INTO schema_version VALUES (?)", (INDEX_SCHEMA_VERSION,))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")


_SUCCESS = EPISODE_COLUMNS.index("success")
_KEY = EPISODE_COLUMNS.index("key")
_TASK = EPISODE_COLUMNS.index("task_id")
_REAL_EPISODE_COLUMNS = [c for c in EPISODE_COLUMNS if _TYPES.get(c) == "REAL"]


@contextmanager
def open_results_index(results_dir: Path) -> Iterator[Index]:
    """The index of ``results_dir``, built from its run directories first when missing;
    closed on leaving."""
    path = Path(results_dir) / INDEX_FILE
    missing = not path.exists()
    index = Index(path)
    try:
        if missing:
            index.rebuild(results_dir)
        yield index
    finally:
        index.close()


def _task_map(maps: dict[str | None, dict[str, str]], text: str | None) -> dict[str, str]:
    if text not in maps:
        maps[text] = json.loads(text or "{}")
    return maps[text]


def _played_by(agents: dict[str, str], played: list[tuple[str, str | None]]) -> list[str]:
    """The agents of a run's episodes (``(task, agent or None)``: the task's agent then),
    and of its tasks not played yet, sorted."""
    found = {agent or agents.get(task) for task, agent in played}
    started = {task for task, _ in played}
    found |= {agent for task, agent in agents.items() if task not in started}
    return sorted(a for a in found if a)


def _load(run: RunDir) -> tuple[RunManifest, list[tuple[Any, ...]]]:
    manifest = run.read_manifest()
    imported = isinstance(manifest.extra.get("imported"), dict)  # its harness played it
    return manifest, [_episode_row(r, imported=imported) for r in run.read_as(_Row)]


def _run_row(m: RunManifest) -> tuple[Any, ...]:
    values = m.model_dump(include=set(RUN_COLUMNS))
    values["models"] = json.dumps([model.name for model in m.models])
    values["rescored_from"] = (m.extra.get("rescored_from") or {}).get("run_id")
    values["rescore_scorer"] = rescore_scorer(m)
    values["scorers"] = json.dumps(task_scorers(m), sort_keys=True)
    values["agents"] = json.dumps(task_agents(m), sort_keys=True)
    values["variant"], values["played_at"] = run_variant(m), played_at(m)
    values["tasks_check"] = int(is_tasks_check(m))
    return tuple(values[c] for c in RUN_COLUMNS)


def _episode_row(record: BaseModel, *, imported: bool = False) -> tuple[Any, ...]:
    """A record's row of :data:`EPISODE_TABLE` (``imported``: no agent of its own)."""
    agent = None if imported else episode_agent(getattr(record, "trajectory", None))
    return (*(getattr(record, c) for c in EPISODE_COLUMNS), agent)
