"""``BM25Backend``: a local full-text index (SQLite FTS5, ranked by BM25) over a JSONL corpus.

The index is built once per corpus and cached as a SQLite file named by a hash of the
corpus bytes and the index settings, so a changed corpus gets a new index and an unchanged
one is never rebuilt. It is a :class:`gem_eval.cache.CacheEntry`: one thread or process
builds it (under a lock) into a temporary file renamed into place, so a reader sees either
no index or a whole one, and a damaged index is built again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gem_eval.cache import CacheEntry, cache_dir
from gem_eval.errors import UserError
from gem_eval.tools.search.backend import Hit, SearchBackend

INDEX_VERSION = 1
"""Bumped when the index layout changes, so old cached indexes are not reused."""

TOKENIZER = "porter unicode61 remove_diacritics 2"
MAX_TERMS = 32
"""Terms of a query beyond this many are ignored (a model may paste a whole page)."""

_WORD = re.compile(r"\w+")
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")
_FUNCTION_WORDS = (
    "a an and are as at be by did do does for from had has have how i in is it its of on or"
    " that the this to was were what when where which who whom whose why will with"
)
_STOPWORDS = frozenset(_FUNCTION_WORDS.split())

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE docs USING fts5(
    doc_id UNINDEXED, url UNINDEXED, title, text, tokenize = '{TOKENIZER}'
);
"""
_QUERY = """
SELECT doc_id, title, text, url, bm25(docs, 0.0, 0.0, ?, 1.0) AS rank
FROM docs WHERE docs MATCH ? ORDER BY rank, rowid LIMIT ?
"""

Row = tuple[str, str, str, str | None]
"""A document as indexed: id, title, text, url."""


@dataclass(frozen=True)
class CorpusFields:
    """The names of a corpus record's fields (only ``text`` is required in a record)."""

    title: str = "title"
    text: str = "text"
    id: str = "id"
    url: str = "url"


def default_cache_dir() -> Path:
    """``$GEM_EVAL_CACHE/search``, or ``~/.cache/gem-eval/search`` when it is not set."""
    return cache_dir("search")


def match_expression(query: str) -> str | None:
    """An FTS5 ``MATCH`` expression for free text: its words, quoted, joined by ``OR``.

    Every word is quoted, so nothing in the text (quotes, colons, parentheses, ``-``, ``*``,
    ``AND``/``NEAR``, column names) is read as query syntax. Common function words are
    dropped unless nothing else is left. ``None`` when the text has no words at all.
    """
    words = [w for w in dict.fromkeys(_WORD.findall(query.lower())) if any(map(str.isalnum, w))]
    terms = [w for w in words if w not in _STOPWORDS] or words
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms[:MAX_TERMS])


class BM25Backend(SearchBackend):
    """Searches a JSONL corpus (one ``{"title": ..., "text": ...}`` object a line).

    The index is built (or found in the cache) when the backend is made, so a bad corpus
    fails before a run starts. Queries run in a worker thread, each on its own read-only
    connection.

    Args:
        corpus: Path of the JSONL corpus.
        title_field: Field holding a document's title (optional in a record).
        text_field: Field holding a document's text (required).
        id_field: Field holding a document's id (default: its line number).
        url_field: Field holding a document's URL (optional).
        title_weight: How much more a title match counts than a text match.
        cache_dir: Where indexes are kept (default: :func:`default_cache_dir`).

    Attributes:
        index_path: The index file in use.
        built: True when this backend built the index (False: it was in the cache).
        documents: How many documents the index holds.

    Raises:
        UserError: The corpus is missing or has a bad line (``file:line: message``), or
            the cache directory cannot be written.
    """

    def __init__(
        self,
        corpus: str | os.PathLike[str],
        *,
        title_field: str = "title",
        text_field: str = "text",
        id_field: str = "id",
        url_field: str = "url",
        title_weight: float = 3.0,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.corpus = Path(corpus)
        if not self.corpus.is_file():
            raise UserError(f"search corpus not found: {self.corpus}")
        if not title_weight > 0:
            raise ValueError(f"title_weight must be positive, not {title_weight!r}")
        self.fields = CorpusFields(title_field, text_field, id_field, url_field)
        self.title_weight = float(title_weight)
        data = self.corpus.read_bytes()
        self.corpus_sha256 = hashlib.sha256(data).hexdigest()
        settings: dict[str, Any] = {"corpus": self.corpus_sha256, "fields": asdict(self.fields)}
        settings.update(version=INDEX_VERSION, tokenizer=TOKENIZER)
        key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:20]
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.index_path = cache / f"{_SLUG.sub('_', self.corpus.stem)[:40]}-{key}.sqlite"
        self.built = False
        self.documents = self._open_existing()
        if self.documents is None:
            self.documents = self._build(read_corpus(self.corpus, data, self.fields))

    async def search(self, query: str, k: int) -> list[Hit]:
        expression = match_expression(query)
        if expression is None or k < 1:
            return []
        return await asyncio.to_thread(self._search, expression, k)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "bm25",
            "corpus": str(self.corpus),
            "corpus_sha256": self.corpus_sha256,
            "documents": self.documents,
            "fields": asdict(self.fields),
            "title_weight": self.title_weight,
            "tokenizer": TOKENIZER,
            "index_version": INDEX_VERSION,
        }

    def _connect(self, path: Path | None = None) -> sqlite3.Connection:
        # The file is never changed once renamed into place (only replaced): immutable.
        uri = f"{(path or self.index_path).resolve().as_uri()}?mode=ro&immutable=1"
        return sqlite3.connect(uri, uri=True, check_same_thread=False)

    def _search(self, expression: str, k: int) -> list[Hit]:
        with contextlib.closing(self._connect()) as db:
            rows = db.execute(_QUERY, (self.title_weight, expression, k)).fetchall()
        return [Hit(id=i, title=t, text=x, url=u, score=-rank) for i, t, x, u, rank in rows]

    def _open_existing(self, path: Path | None = None) -> int | None:
        """The document count of the cached index, or ``None`` when there is none usable."""
        path = path or self.index_path
        if not path.is_file():
            return None
        try:
            with contextlib.closing(self._connect(path)) as db:
                row = db.execute("SELECT value FROM meta WHERE key = 'documents'").fetchone()
        except sqlite3.DatabaseError:  # damaged or foreign: build it again
            return None
        return int(row[0]) if row else None

    def _build(self, rows: list[Row]) -> int:
        """Build the index (the corpus already read, so a bad one fails before the cache
        is touched); another thread or process may have built it meanwhile."""
        entry = CacheEntry(self.index_path, check=lambda p: self._open_existing(p) is not None)

        def write(tmp: Path) -> None:
            _write_index(tmp, rows, self.corpus_sha256)

        try:
            self.built = entry.ensure(write)
        except OSError as exc:
            raise UserError(
                f"cannot write the search index in {self.index_path.parent}: {exc.strerror}"
                " (set GEM_EVAL_CACHE to a writable directory)"
            ) from None
        return len(rows)  # the same corpus and settings, whoever built it


def _write_index(path: Path, rows: list[Row], corpus_sha256: str) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode = OFF")
        db.executescript(_SCHEMA)
        db.executemany("INSERT INTO docs (doc_id, title, text, url) VALUES (?, ?, ?, ?)", rows)
        db.execute("INSERT INTO docs (docs) VALUES ('optimize')")
        meta = {"documents": str(len(rows)), "corpus_sha256": corpus_sha256}
        meta["index_version"] = str(INDEX_VERSION)
        db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        db.commit()
    with open(path, "rb+") as f:  # on disk before the rename makes it visible
        os.fsync(f.fileno())


def read_corpus(path: Path, data: bytes, fields: CorpusFields) -> list[Row]:
    """The documents of a JSONL corpus; blank lines are skipped.

    Raises:
        UserError: A line that is not a JSON object with a non-empty text, a field of the
            wrong type, or a repeated id, as ``file:line: message``.
    """
    rows: list[Row] = []
    seen: set[str] = set()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
        except UnicodeDecodeError:
            raise UserError(f"{where}: not valid UTF-8") from None
        except json.JSONDecodeError as exc:
            raise UserError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(record, dict):
            raise UserError(f"{where}: expected a JSON object, got {type(record).__name__}")
        text = _string(record, fields.text, where, required=True)
        title = _string(record, fields.title, where)
        url = _string(record, fields.url, where) or None
        raw_id = record.get(fields.id, number)
        if isinstance(raw_id, int) and not isinstance(raw_id, bool):
            raw_id = str(raw_id)
        doc_id = _string({fields.id: raw_id}, fields.id, where, required=True)
        if doc_id in seen:
            raise UserError(f"{where}: duplicate id {doc_id!r}")
        seen.add(doc_id)
        rows.append((doc_id, title, text, url))
    if not rows:
        raise UserError(f"{path}: the corpus has no documents")
    return rows


def _string(record: dict[str, Any], field: str, where: str, required: bool = False) -> str:
    """The string in ``record[field]`` (``""`` when an optional field is missing)."""
    value = record.get(field)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        need = "a non-empty string" if required else "a string"
        raise UserError(f"{where}: field {field!r} must be {need}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{where}: field {field!r} holds a lone surrogate") from None
    return value
