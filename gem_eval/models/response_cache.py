"""The model-response cache: replies kept on disk, served again for the same request.

A reply is looked up by a key that holds everything that decides it (:func:`cache_key`):
the model's name and backend, the messages, the tools offered, the generation settings
(:meth:`~gem_eval.models.base.GenerateConfig.sampling_args`, provider extras included),
a salt the caller chooses (the executor gives each episode its epoch and sample seed, so
that sampled epochs stay distinct) and :data:`FORMAT_VERSION`.

The server's base URL is *not* part of the key: it says where a model is served, not
which model answers (a ``local/`` model gets a new port on every run, and moving a vLLM
server must not empty the cache). Two different models behind one name at two URLs
would share entries: name them apart (``--model``).

Entries live in one SQLite file, ``<cache root>/responses/responses.sqlite`` (see
:func:`gem_eval.cache.cache_root`), in WAL mode with a busy timeout: many threads and
processes read and write it at once. Nothing expires by itself; ``gem-eval cache clear
--older-than 7d`` removes old entries.

:class:`CachedModel` wraps a model for one episode. A reply served from the cache has
``cached=True``, ``latency_s=0``, no retries and ``usage.cost_usd=0.0`` (nothing was spent
on it), or ``None`` when the stored reply's cost was ``None`` (a model without a known
price: its cost stays unknown rather than a made-up 0). Its token counts are kept, so token
limits cut a replayed episode where they cut the first one. Only successful replies are
stored: a failed call is never replayed from the cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gem_eval.cache import cache_dir, file_lock
from gem_eval.errors import GemEvalError
from gem_eval.models.base import (
    GenerateConfig,
    Message,
    Model,
    ModelOutput,
    ModelWrapper,
    ToolSchema,
)

FORMAT_VERSION = 1
"""Part of every key: raising it retires every entry written before."""

BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another process's write to finish before failing."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created_at REAL NOT NULL,
    output TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_created_at ON responses (created_at);
CREATE INDEX IF NOT EXISTS responses_model ON responses (model);
"""


class ResponseCacheError(GemEvalError):
    """The cache's file could not be opened, read or written."""


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds.

    Attributes:
        path: The SQLite file.
        entries: Stored replies.
        size_bytes: The file's size on disk (with its write-ahead log).
        by_model: Stored replies per model name.
        oldest: When the oldest entry was stored (Unix time), ``None`` when empty.
        newest: When the newest entry was stored.
    """

    path: Path
    entries: int
    size_bytes: int
    by_model: dict[str, int] = field(default_factory=dict)
    oldest: float | None = None
    newest: float | None = None


def default_path() -> Path:
    """``<cache root>/responses/responses.sqlite``."""
    return cache_dir("responses") / "responses.sqlite"


def cache_key(
    model: str,
    backend: str,
    messages: list[Message],
    tools: list[ToolSchema] | None,
    config: GenerateConfig,
    salt: dict[str, Any],
) -> str:
    """The sha256 of the canonical JSON of everything that decides a reply.

    ``tools=[]`` and ``None`` are the same request (no tools offered).
    """
    request = {
        "format": FORMAT_VERSION,
        "model": model,
        "backend": backend,
        "messages": messages,
        "tools": tools or None,
        "settings": config.sampling_args(),
        "salt": salt,
    }
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """Replies on disk, keyed by :func:`cache_key`; counts its hits and misses.

    One connection serves this object's threads (under a lock: each statement takes well
    under a millisecond); other processes open their own and SQLite's locking orders the
    writes.

    Args:
        path: The SQLite file (default: :func:`default_path`); created when missing.
        clock: The time entries are stamped with and ages are measured against.

    Raises:
        ResponseCacheError: The file cannot be opened or is not a cache.
    """

    def __init__(self, path: Path | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path or default_path()
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        try:
            # Switching to WAL takes an exclusive lock that a busy timeout does not always
            # wait for: processes opening a new file at once take turns here instead.
            with file_lock(self.path.with_name(f".{self.path.name}.lock")):
                self._db = _open(self.path)
        except (OSError, sqlite3.Error) as exc:
            raise ResponseCacheError(f"response cache {self.path}: {exc}") from exc

    def get(self, key: str) -> ModelOutput | None:
        """The stored reply for ``key``, counted as a hit, or ``None`` (a miss).

        An entry this version cannot read (written by another one) is a miss.
        """
        row = self._execute("SELECT output FROM responses WHERE key = ?", (key,)).fetchone()
        output = None
        if row is not None:
            try:
                output = ModelOutput.model_validate_json(row[0])
            except ValidationError:
                output = None
        with self._lock:
            if output is None:
                self.misses += 1
            else:
                self.hits += 1
        return output

    def put(self, key: str, model: str, output: ModelOutput) -> None:
        """Store ``output`` under ``key`` (replacing an entry this version cannot read)."""
        self._execute(
            "INSERT OR REPLACE INTO responses (key, model, created_at, output) VALUES (?,?,?,?)",
            (key, model, self.clock(), output.model_dump_json()),
        )

    def counts(self) -> dict[str, int]:
        """This object's lookups so far: ``{"hits": n, "misses": m}``."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses}

    def stats(self) -> CacheStats:
        """What the file holds (every process's entries)."""
        entries, oldest, newest = self._execute(
            "SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM responses"
        ).fetchone()
        rows = self._execute(
            "SELECT model, COUNT(*) FROM responses GROUP BY model ORDER BY model"
        ).fetchall()
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )
        return CacheStats(self.path, entries, size, dict(rows), oldest, newest)

    def count(self, older_than_s: float | None = None, model: str | None = None) -> int:
        """How many entries :meth:`clear` with the same arguments would remove."""
        condition, args = self._selection(older_than_s, model)
        return int(self._execute(f"SELECT COUNT(*) FROM responses{condition}", args).fetchone()[0])

    def clear(self, older_than_s: float | None = None, model: str | None = None) -> int:
        """Remove entries stored more than ``older_than_s`` ago and/or of ``model``
        (both ``None``: every entry). Returns how many were removed."""
        condition, args = self._selection(older_than_s, model)
        removed = int(self._execute(f"DELETE FROM responses{condition}", args).rowcount)
        if removed:
            # Give the space back; another process reading at this moment only delays it.
            # In WAL mode VACUUM writes the compacted file into the log: the checkpoint
            # after it is what shrinks the file (and empties the log).
            try:
                self._execute("VACUUM")
                self._execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except ResponseCacheError:
                pass
        return removed

    def _selection(
        self, older_than_s: float | None, model: str | None
    ) -> tuple[str, tuple[Any, ...]]:
        where: list[str] = []
        args: list[Any] = []
        if older_than_s is not None:
            where.append("created_at < ?")
            args.append(self.clock() - older_than_s)
        if model is not None:
            where.append("model = ?")
            args.append(model)
        return (f" WHERE {' AND '.join(where)}" if where else ""), tuple(args)

    def close(self) -> None:
        """Close the file. Safe to call twice."""
        with self._lock:
            self._db.close()

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            try:
                return self._db.execute(sql, args)
            except sqlite3.Error as exc:
                raise ResponseCacheError(f"response cache {self.path}: {exc}") from exc


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(
        path,
        timeout=BUSY_TIMEOUT_S,
        isolation_level=None,  # autocommit: each write is its own transaction
        check_same_thread=False,  # ResponseCache guards it with a lock
    )
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # Commits skip the fsync (the log is synced at checkpoints): a power cut may lose
        # the last replies, never the file's consistency.
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
    except sqlite3.Error:
        db.close()
        raise
    return db


def cacheable(model: Model) -> bool:
    """Whether ``model``'s replies may be cached: not the reference agents, whose
    replies act on the episode's env (``oracle``) or cost nothing (``noop``)."""
    from gem_eval.models.reference import REFERENCE_MODELS, NoopModel

    return not isinstance(model, NoopModel) and model.name not in REFERENCE_MODELS


class CachedModel(ModelWrapper):
    """``inner`` for one episode, its replies served from ``cache`` when stored.

    Args:
        inner: The model that answers misses.
        cache: Where replies are kept.
        salt: What sets this episode's calls apart from another's with the same
            messages (the executor passes ``{"epoch": ..., "seed": ...}``).
        backend: Part of the key (default: ``inner``'s class name).

    Raises:
        ValueError: ``inner`` is a reference agent (see :func:`cacheable`).
    """

    def __init__(
        self,
        inner: Model,
        cache: ResponseCache,
        *,
        salt: dict[str, Any] | None = None,
        backend: str | None = None,
    ) -> None:
        if not cacheable(inner):
            raise ValueError(f"model {inner.name!r} acts on the episode: not cacheable")
        super().__init__(inner)
        self.cache = cache
        self.salt = salt or {}
        self.backend = backend or type(inner).__name__

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        settings = config or GenerateConfig()
        key = cache_key(self.name, self.backend, messages, tools, settings, self.salt)
        # The file is shared with other processes: never wait on its lock in the event loop.
        stored = await asyncio.to_thread(self.cache.get, key)
        if stored is not None:
            # Nothing was spent on it: 0.0 for a priced model, but an unpriced one's
            # cost stays unknown (None), so that a table shows "-", not a made-up 0.
            cost = None if stored.usage.cost_usd is None else 0.0
            usage = stored.usage.model_copy(update={"cost_usd": cost})
            return stored.model_copy(
                update={"cached": True, "latency_s": 0.0, "retries": 0, "usage": usage}
            )
        output = await self.inner.generate(messages, tools, config)
        await asyncio.to_thread(self.cache.put, key, self.name, output)
        return output
