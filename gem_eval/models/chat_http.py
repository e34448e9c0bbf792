"""``JSONClient``: one pooled aiohttp session that POSTs JSON and returns parsed JSON.

The direct backend's transport. The ``openai`` SDK spends most of a call's CPU on work
an OpenAI-compatible server does not need from us: it walks its TypedDict annotations
over the whole (growing) message list on every call, and httpx's pool checks every idle
socket on each request. Here a request is ``json.dumps`` of plain dicts over a
keep-alive connection, and a reply is ``json.loads`` of the body.

Failures keep the shapes :func:`gem_eval.models.retry.classify` reads:

* an HTTP error status raises an :class:`APIStatusError` subclass named as the openai
  SDK names it (``RateLimitError`` for 429 ...), carrying ``status_code`` and a
  ``response`` whose ``headers`` hold ``Retry-After``; the message holds the server's
  error text (redacted later, like any error);
* a timeout raises ``aiohttp.ServerTimeoutError``, a refused or dropped connection
  aiohttp's own ``ClientError`` subclasses: transient, without a status;
* a body that is not JSON raises ``json.JSONDecodeError`` (transient).
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import TYPE_CHECKING, Any

from gem_eval._version import __version__
from gem_eval.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Mapping

    import aiohttp

_MAX_ERROR_TEXT = 2000
"""Characters of an error body kept in the exception's message."""


class HTTPResponse:
    """What an error keeps of the response: its status and headers (``Retry-After``)."""

    def __init__(self, status_code: int, headers: Mapping[str, str]) -> None:
        self.status_code, self.headers = status_code, headers


class APIStatusError(Exception):
    """The server answered with an HTTP error status.

    Attributes:
        status_code: The HTTP status.
        response: The status and headers.
        body: The parsed JSON error body, or its text when it is not JSON.
    """

    def __init__(self, message: str, *, response: HTTPResponse, body: object) -> None:
        super().__init__(message)
        self.status_code = response.status_code
        self.response, self.body = response, body


class BadRequestError(APIStatusError):
    """400."""


class AuthenticationError(APIStatusError):
    """401."""


class PermissionDeniedError(APIStatusError):
    """403."""


class NotFoundError(APIStatusError):
    """404."""


class ConflictError(APIStatusError):
    """409."""


class UnprocessableEntityError(APIStatusError):
    """422."""


class RateLimitError(APIStatusError):
    """429."""


class InternalServerError(APIStatusError):
    """5xx."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error(status: int, headers: Mapping[str, str], data: bytes) -> APIStatusError:
    """The exception for an HTTP error reply, worded like the openai SDK's."""
    text = data.decode("utf-8", errors="replace")
    body: object = text
    detail: object = text[:_MAX_ERROR_TEXT]
    try:
        body = json.loads(text)
    except ValueError:
        pass
    else:
        error = body.get("error", body) if isinstance(body, dict) else body
        message = error.get("message") if isinstance(error, dict) else None
        detail = message if isinstance(message, str) else error
    cls = _BY_STATUS.get(status, InternalServerError if status >= 500 else APIStatusError)
    message = f"Error code: {status} - {detail}"
    return cls(message, response=HTTPResponse(status, headers), body=body)


class JSONClient:
    """POSTs JSON to one server over a pooled keep-alive session.

    The session belongs to the event loop it was opened on; used from another loop (a
    second ``asyncio.run``) it is replaced.

    Args:
        base_url: The server's base URL (``http://host:port/v1``).
        api_key: Sent as ``Authorization: Bearer KEY``.
    """

    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"gem-eval/{__version__}",
        }
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def post(self, path: str, payload: Mapping[str, Any], timeout_s: float) -> Any:
        """POST ``payload`` to ``base_url + path``; return the parsed JSON reply.

        Raises:
            APIStatusError: The server answered with a status >= 300.
            aiohttp.ServerTimeoutError: No whole reply within ``timeout_s``.
            aiohttp.ClientError: The connection failed or dropped.
            json.JSONDecodeError: The reply is not JSON.
        """
        import aiohttp

        session = self._session_for_this_loop()
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        try:
            async with session.post(
                self.base_url + path,
                data=data,
                timeout=aiohttp.ClientTimeout(total=timeout_s),
                allow_redirects=False,
            ) as response:
                body = await response.read()
                status, headers = response.status, response.headers
        except asyncio.TimeoutError as exc:
            if isinstance(exc, aiohttp.ServerTimeoutError):
                raise
            raise aiohttp.ServerTimeoutError(f"Request timed out after {timeout_s:g} s") from exc
        if status >= 300:
            raise status_error(status, headers, body)
        return json.loads(body)

    def _session_for_this_loop(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is not None and (self._session.closed or self._loop is not loop):
            self._drop_session()
        if self._session is None:
            try:
                import aiohttp
            except ImportError as exc:
                raise UserError(
                    "aiohttp is not installed: pip install gem-eval (it depends on it)"
                ) from exc
            tls = _ssl_context() if self.base_url.startswith("https:") else True
            # No connector limit: the model's adaptive limit bounds the calls in flight.
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, ssl=tls)
            # Proxies from the environment, as httpx (the openai SDK) honours them; only
            # when one is set, since aiohttp then looks them up on every request.
            proxied = bool(urllib.request.getproxies_environment())
            self._session = aiohttp.ClientSession(
                connector=connector, headers=self._headers, trust_env=proxied
            )
            self._loop = loop
        return self._session

    def _drop_session(self) -> None:
        """Forget a session without awaiting on its loop (gone, or not this one)."""
        session, self._session, self._loop = self._session, None, None
        if session is not None and not session.closed:
            connector = session.connector
            if connector is not None:
                connector._close()  # the synchronous half of close(): marks it closed
            session.detach()

    async def aclose(self) -> None:
        """Close the session (safe to call twice, and from another loop)."""
        if self._session is not None and self._loop is asyncio.get_running_loop():
            session, self._session, self._loop = self._session, None, None
            await session.close()
        else:
            self._drop_session()


def _ssl_context() -> Any:
    """The CA bundle httpx (and so the openai SDK) verifies against, when installed."""
    import ssl

    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())
