"""``SearchTool``, the ``search`` tool an agent calls, and ``SearchKit``, which a task's
``tools:`` entry builds::

    tools:
      - {name: search, corpus: tasks/data/search/corpus.jsonl, k: 3}
      - {name: search, backend: http, url: "https://...", api_key_env: SEARCH_API_KEY}
"""

from __future__ import annotations

import inspect
import os
from typing import TYPE_CHECKING, Any

from gem_eval.errors import did_you_mean
from gem_eval.tools.base import Tool, ToolResult
from gem_eval.tools.kit import ToolKit
from gem_eval.tools.search.backend import Hit, SearchBackend, SearchError
from gem_eval.tools.search.bm25 import BM25Backend
from gem_eval.tools.search.http import HTTPSearchBackend

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox

BACKENDS: dict[str, type[SearchBackend]] = {"bm25": BM25Backend, "http": HTTPSearchBackend}
"""Backend classes by the name a task's ``backend:`` setting uses."""


class SearchTool(Tool):
    """Searches a backend and shows the model numbered results.

    Each result is ``[n] Title``, its URL when it has one, and its text cut to
    ``max_chars``. Called natively as ``search(query, k)`` or in the text protocol as
    ``<search>query</search>``.

    Args:
        backend: Where results come from (shared by every episode of a run).
        k: Results returned when the model does not ask for a number.
        max_k: The most results the model may ask for.
        max_chars: The most characters of each result's text shown.
    """

    name = "search"
    text_tag = "search"
    text_argument = "query"

    def __init__(
        self, backend: SearchBackend, *, k: int = 3, max_k: int = 10, max_chars: int = 600
    ) -> None:
        check_limits(k=k, max_k=max_k, max_chars=max_chars)
        self.backend, self.k, self.max_k, self.max_chars = backend, k, max_k, max_chars
        self.description = (
            "Search the document collection and return the most relevant passages, "
            "numbered, with their titles. Write the query as keywords or a question."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "k": {
                    "type": "integer",
                    "description": f"How many results to return (default {k}, at most {max_k}).",
                },
            },
            "required": ["query"],
        }

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        query = str(args.get("query", "")).strip()
        if not query:
            return ToolResult(output="Error: the query is empty.", is_error=True)
        k = args.get("k", self.k)
        k = min(max(k, 1), self.max_k) if isinstance(k, int) else self.k
        try:
            hits = await self.backend.search(query, k)
        except SearchError as exc:
            metadata = {} if exc.status is None else {"status": exc.status}
            return ToolResult(
                output=f"Error: search failed: {exc}", is_error=True, metadata=metadata
            )
        found = [{"id": hit.id, "score": hit.score} for hit in hits]
        return ToolResult(output=self.render(hits), metadata={"hits": found})

    def render(self, hits: list[Hit]) -> str:
        """The results as the model sees them."""
        if not hits:
            return "No results."
        blocks = []
        for n, hit in enumerate(hits, start=1):
            lines = [f"[{n}] {hit.title or '(untitled)'}"]
            if hit.url:
                lines.append(hit.url)
            lines.append(_shorten(hit.text, self.max_chars))
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


class SearchKit(ToolKit):
    """The ``search`` entry of a task: one backend for the run, a tool per episode.

    Args:
        backend: ``bm25`` (a local index over ``corpus``) or ``http`` (a web search API).
        corpus: The JSONL corpus of the ``bm25`` backend.
        k: Results per search unless the model asks for another number.
        max_k: The most results the model may ask for.
        max_chars: The most characters of each result's text shown.
        **settings: The backend's settings (see :class:`BM25Backend`,
            :class:`HTTPSearchBackend`).

    Raises:
        UserError: A missing corpus, a bad corpus line, a missing API key.
        TypeError: An unknown setting.
        ValueError: A bad setting value.
    """

    def __init__(
        self,
        *,
        backend: str = "bm25",
        corpus: str | os.PathLike[str] | None = None,
        k: int = 3,
        max_k: int = 10,
        max_chars: int = 600,
        **settings: Any,
    ) -> None:
        if backend not in BACKENDS:
            hint = did_you_mean(backend, BACKENDS)
            raise ValueError(f"unknown backend {backend!r} (backends: bm25, http).{hint}")
        cls = BACKENDS[backend]
        known = [p for p in inspect.signature(cls).parameters if p != "corpus"]
        for key in settings:
            if key not in known:
                hint = did_you_mean(key, known)
                raise TypeError(f"unknown setting {key!r} for the {backend} backend.{hint}")
        if backend == "bm25":
            if corpus is None:
                raise TypeError("the bm25 backend needs a corpus (a JSONL file)")
            settings["corpus"] = corpus
        elif corpus is not None:
            raise TypeError("corpus is a setting of the bm25 backend, not of http")
        elif "url" not in settings:
            raise TypeError("the http backend needs a url")
        self.tool_settings = {"k": k, "max_k": max_k, "max_chars": max_chars}
        check_limits(**self.tool_settings)  # before the index is built
        self.backend: SearchBackend = cls(**settings)

    async def open(self, sandbox: Sandbox | None) -> list[Tool]:
        return [SearchTool(self.backend, **self.tool_settings)]

    async def aclose(self) -> None:
        await self.backend.aclose()

    def describe(self) -> dict[str, Any]:
        return {**self.backend.describe(), **self.tool_settings}


def check_limits(*, k: int, max_k: int, max_chars: int) -> None:
    """Raise ``ValueError`` unless the tool's limits are positive integers with k <= max_k."""
    for setting, value in (("k", k), ("max_k", max_k), ("max_chars", max_chars)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{setting} must be a positive integer, not {value!r}")
    if k > max_k:
        raise ValueError(f"k ({k}) must not exceed max_k ({max_k})")


def _shorten(text: str, limit: int) -> str:
    """``text`` with its whitespace runs collapsed, cut at a word boundary near ``limit``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[: limit + 1] else text[:limit]
    return cut.rstrip(" ,;:") + " ..."
