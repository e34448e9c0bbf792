"""``SearchBackend``: where the ``search`` tool's results come from, and ``Hit``, one result."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from gem_eval.errors import GemEvalError


@dataclass(frozen=True)
class Hit:
    """One search result.

    Attributes:
        id: The document's id in its corpus (for a web result, its URL or rank).
        title: The document's title.
        text: The document's text or the result's snippet.
        score: Relevance; higher is better. Comparable only within one result list.
        url: Where the document lives, when it has an address.
    """

    id: str
    title: str
    text: str
    score: float
    url: str | None = None


class SearchError(GemEvalError):
    """A search failed in a way the model should be told about (an HTTP error, a timeout).

    The ``search`` tool turns it into an error result; it never ends the episode.

    Attributes:
        status: The HTTP status, when there was one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class SearchBackend(ABC):
    """A source of search results: a local index or a web search API.

    One backend serves a whole run (every episode's ``search`` tool shares it), so
    :meth:`search` must be safe to call concurrently.
    """

    @abstractmethod
    async def search(self, query: str, k: int) -> list[Hit]:
        """The best ``k`` hits for ``query``, best first (fewer when fewer match).

        ``query`` is free text as a model wrote it: any characters, any syntax.

        Raises:
            SearchError: The search could not be done (shown to the model as an error).
        """

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the run manifest records about this backend (never a secret)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what the backend holds (connections)."""
