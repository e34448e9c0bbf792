"""The ``search`` tool: a local BM25 index over a JSONL corpus, or a web search API."""

from __future__ import annotations

from gem_eval.tools.search.backend import Hit, SearchBackend, SearchError
from gem_eval.tools.search.bm25 import BM25Backend, default_cache_dir, match_expression
from gem_eval.tools.search.http import HTTPSearchBackend
from gem_eval.tools.search.tool import BACKENDS, SearchKit, SearchTool

__all__ = [
    "BACKENDS",
    "BM25Backend",
    "HTTPSearchBackend",
    "Hit",
    "SearchBackend",
    "SearchError",
    "SearchKit",
    "SearchTool",
    "default_cache_dir",
    "match_expression",
]
