"""``HTTPSearchBackend``: results from a web search API, read through a field mapping.

Providers differ in where the key goes and how the JSON reply is shaped; the settings say
both. For example, Brave Search::

    {name: search, backend: http, url: "https://api.search.brave.com/res/v1/web/search",
     api_key_env: BRAVE_API_KEY, api_key_header: X-Subscription-Token, api_key_prefix: "",
     results_path: web.results, text_field: description, k_param: count}

Failures (an HTTP error status, a timeout, a reply that is not JSON) raise
:class:`SearchError`, which the ``search`` tool shows to the model as an error result.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from gem_eval._version import __version__
from gem_eval.errors import MissingAPIKeyError
from gem_eval.tools.search.backend import Hit, SearchBackend, SearchError

METHODS = ("GET", "POST")


class HTTPSearchBackend(SearchBackend):
    """Sends the query to ``url`` and maps the JSON reply to hits.

    Args:
        url: The API endpoint.
        api_key: The key itself (prefer ``api_key_env``, which keeps it out of task files).
        api_key_env: The environment variable holding the key.
        api_key_header: The header the key is sent in.
        api_key_prefix: Written before the key in that header.
        api_key_param: Send the key as this query/body parameter instead of a header.
        method: ``GET`` (query in the URL) or ``POST`` (query in a JSON body).
        query_param: The parameter holding the query.
        k_param: The parameter holding the number of results wanted, if the API has one.
        params: Fixed extra parameters (e.g. ``{"safesearch": "strict"}``); they are
            recorded in the run manifest, so never put a key here.
        headers: Fixed extra headers (not recorded).
        results_path: Dotted path to the list of results in the reply (``""``: the reply
            is the list); a number picks a list item (``data.0.items``).
        title_field: Dotted path to a result's title.
        text_field: Dotted path to a result's text or snippet.
        url_field: Dotted path to a result's URL.
        timeout: Seconds to wait for the reply.

    Raises:
        MissingAPIKeyError: ``api_key_env`` names a variable that is not set.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        api_key_header: str = "Authorization",
        api_key_prefix: str = "Bearer ",
        api_key_param: str | None = None,
        method: str = "GET",
        query_param: str = "q",
        k_param: str | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        results_path: str = "results",
        title_field: str = "title",
        text_field: str = "text",
        url_field: str = "url",
        timeout: float = 10.0,
    ) -> None:
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"url must be an http(s) URL, not {url!r}")
        self.method = method.upper()
        if self.method not in METHODS:
            raise ValueError(f"method must be GET or POST, not {method!r}")
        if api_key is not None and api_key_env is not None:
            raise ValueError("give api_key or api_key_env, not both")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        if api_key_env is not None:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise MissingAPIKeyError(
                    f"search: the environment variable {api_key_env} (the API key) is not set"
                )
        self.url, self.timeout = url, float(timeout)
        self.query_param, self.k_param = query_param, k_param
        self.params = dict(params or {})
        self.results_path = results_path
        self.fields = {"title": title_field, "text": text_field, "url": url_field}
        self._api_key_env = api_key_env
        self._headers = {"Accept": "application/json", "User-Agent": f"gem-eval/{__version__}"}
        self._headers.update(headers or {})
        self._secret_params: dict[str, str] = {}
        if api_key and api_key_param:
            self._secret_params[api_key_param] = api_key
        elif api_key:
            self._headers[api_key_header] = f"{api_key_prefix}{api_key}"
        self._has_key = bool(api_key)

    async def search(self, query: str, k: int) -> list[Hit]:
        if not query.strip() or k < 1:
            return []
        reply = await asyncio.to_thread(self._fetch, query, k)
        items = _pick(reply, self.results_path)
        if not isinstance(items, list):
            where = self.results_path or "the top level"
            raise SearchError(f"the search API's reply has no list of results at {where!r}")
        hits = []
        for rank, item in enumerate(items[:k], start=1):
            url = _text(_pick(item, self.fields["url"])) or None
            title, text = (_text(_pick(item, self.fields[f])) for f in ("title", "text"))
            hits.append(Hit(id=url or str(rank), title=title, text=text, url=url, score=1 / rank))
        return hits

    def describe(self) -> dict[str, Any]:
        # Only the key's variable name and whether a key is set: never the key.
        return {
            "backend": "http",
            "url": self.url,
            "method": self.method,
            "query_param": self.query_param,
            "k_param": self.k_param,
            "params": self.params,
            "results_path": self.results_path,
            "fields": self.fields,
            "timeout": self.timeout,
            "api_key_env": self._api_key_env,
            "api_key_set": self._has_key,
        }

    def _fetch(self, query: str, k: int) -> Any:
        params: dict[str, Any] = {**self.params, self.query_param: query}
        if self.k_param:
            params[self.k_param] = k
        params.update(self._secret_params)
        headers = dict(self._headers)
        if self.method == "GET":
            sep = "&" if urllib.parse.urlsplit(self.url).query else "?"
            request = urllib.request.Request(
                f"{self.url}{sep}{urllib.parse.urlencode(params)}", headers=headers
            )
        else:
            headers["Content-Type"] = "application/json"
            body = json.dumps(params).encode()
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            exc.close()
            raise SearchError(
                f"the search API answered HTTP {exc.code} {exc.reason}", status=exc.code
            ) from None
        except TimeoutError:
            raise SearchError(f"the search API timed out after {self.timeout:g}s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise SearchError(f"the search API timed out after {self.timeout:g}s") from None
            raise SearchError(f"cannot reach the search API: {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:  # e.g. a connection reset mid-reply
            raise SearchError(f"the search API connection failed: {exc}") from None
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise SearchError("the search API's reply is not JSON") from None


def _pick(data: Any, path: str) -> Any:
    """``data`` at a dotted path (``web.results``, ``items.0``); ``None`` when absent."""
    for part in path.split(".") if path else ():
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)
