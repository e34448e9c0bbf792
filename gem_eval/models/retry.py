"""Retrying failed model calls: which failures, how often, how long to wait, when to cut.

Transient failures are retried with exponential backoff and full jitter, honouring a
server's ``Retry-After``: rate limits (429), 408/409, server errors (5xx), timeouts,
connection errors and malformed replies. Refusals (400, 401, 403, 404, 422) are not.
Only the failed call is repeated; the episode's earlier steps are never re-run.

A failed connection is named for what it was, whatever the client made of it: litellm
reports a refused connection as a 500 ``InternalServerError: Connection error.``; the
call that gives up on one says ``connection refused: ...`` (or reset, or closed by the
server), without a status (see :func:`connection_failure`).

The per-call timeout (:class:`~gem_eval.models.call_timeout.CallTimeout`) adapts to the
model, so that a hung request holds neither its episode nor a connection slot for the
whole ``timeout_s``. The rule, over the model's last 256 successful calls:

* A call is cut after ``max(timeout_floor_s, timeout_multiple x p95, 2 x slowest)``
  seconds (defaults: 1 s, 5 x the 95th percentile latency, twice the slowest call), and,
  when it sets ``max_tokens``, never before ``1.5 x max_tokens`` times the p95 seconds
  per generated token: a long generation that was asked for is not a hang. A workload
  whose long calls are more than 5% of its calls has them in its p95; a rarer long call,
  once seen, sets ``slowest``.
* A cut call is retried like any timeout, and each retry of it gets twice the time of
  the last (1, 2, 4, 8 ... s for a model whose calls take a tenth of a second): a
  legitimately long call is cut a few times at most, then runs.
* ``timeout_s`` (``--timeout``) is the ceiling, enforced by the HTTP client itself as
  before: the adaptive cut applies only below it, once 16 calls sent after the model's
  first reply have succeeded (the first calls carry the client's cold start). A call
  already in flight is cut as soon as the timeout has adapted.
* A cut is not a rate limit: it neither shrinks the connection limit nor enters the
  latency window, and the retry waits its backoff without holding a slot.
* Cutting a call closes its connection, so the server drops the request: a cut call is
  never answered later. A reply that reached the client as the deadline fired is used,
  not discarded (see :func:`~gem_eval.models.call_timeout.within`). So a step is never
  sent again once a reply to it was accepted.

Replies are read whole (no streaming), so there is no separate first-byte timeout: the
first byte of a non-streamed reply is its last.
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gem_eval.errors import ModelCallError
from gem_eval.models.call_timeout import CallTimeoutError

T = TypeVar("T")
TRANSIENT_STATUS = {408, 409, 429}


class MalformedReplyError(Exception):
    """The server answered 200 with a body that is not a usable completion."""


@dataclass(frozen=True)
class RetryPolicy:
    """How a model retries.

    Attributes:
        max_retries: Retries after the first attempt.
        timeout_s: The longest a call may take (the adaptive timeout's ceiling).
        initial_wait_s: First backoff (doubled per retry, with full jitter). A quarter
            second: a local server's 5xx or dropped connection is usually over at once,
            a 429 waits its ``Retry-After``, and a failing server still backs off to a
            minute within eight retries.
        max_wait_s: Longest single wait, ``Retry-After`` included.
        timeout_floor_s: The adaptive timeout's floor; at or above ``timeout_s`` it
            turns adaptation off (every call may take ``timeout_s``).
        timeout_multiple: The adaptive timeout in multiples of the p95 latency.
    """

    max_retries: int = 6
    timeout_s: float = 120.0
    initial_wait_s: float = 0.25
    max_wait_s: float = 60.0
    timeout_floor_s: float = 1.0
    timeout_multiple: float = 5.0


@dataclass(frozen=True)
class Failure:
    """What a failed call tells the retry loop."""

    transient: bool
    status: int | None = None
    retry_after: float | None = None
    rate_limited: bool = False
    timed_out: bool = False


def classify(exc: BaseException) -> Failure | None:
    """How to treat ``exc`` raised by an HTTP model client; ``None``: not a call failure.

    Works on litellm's and openai's exceptions (both carry ``status_code`` and, for
    HTTP errors, the ``response`` with its headers) and on httpx / JSON errors.
    """
    if isinstance(exc, MalformedReplyError | json.JSONDecodeError):
        return Failure(transient=True)
    if isinstance(exc, CallTimeoutError | TimeoutError):
        # Any layer's timeout (aiohttp's is a TimeoutError): retried, and never left to
        # escape, since the agent loop reads a bare TimeoutError as its episode time limit.
        return Failure(transient=True, timed_out=True)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = None
    name = type(exc).__name__
    module = type(exc).__module__.split(".")[0]
    if module not in ("litellm", "openai", "httpx", "httpcore", "aiohttp") and status is None:
        return None  # not the client's: a bug to surface, not to retry
    if connection_failure(exc) is not None:  # no server answered: no status (litellm: 500)
        return Failure(True)
    if status is None or status >= 500 or status in TRANSIENT_STATUS:
        return Failure(True, status, _retry_after(exc), rate_limited=status == 429)
    if name in ("Timeout", "APITimeoutError"):
        return Failure(True, status, timed_out=True)
    if name == "APIConnectionError":
        return Failure(True, status)
    return Failure(False, status)


_CONNECTION_KINDS: tuple[tuple[type[OSError], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    (ConnectionResetError, "connection reset"),
    (ConnectionAbortedError, "connection aborted"),
    (BrokenPipeError, "connection broken"),
)
_CLOSED_BY_SERVER = {"ServerDisconnectedError", "RemoteProtocolError"}
"""aiohttp's and httpx's errors for a server that closed the connection without a reply."""
_NOT_CONNECTED = {"ClientConnectorError", "ClientConnectorDNSError", "ConnectError"}
"""aiohttp's and httpx's errors for a connection never made (an unknown host ...)."""


def connection_failure(exc: BaseException) -> str | None:
    """What went wrong with the connection behind ``exc``, named from the cause it was
    raised from (``connection refused: [Errno 111] Connect call failed ...``), or ``None``
    when the call failed otherwise (a server's answer, a timeout, a malformed reply)."""
    chain = _chain(exc)
    if any(isinstance(link, TimeoutError) or "Timeout" in type(link).__name__ for link in chain):
        return None  # a timeout: retried and reported as one
    for link in chain:
        for kind, name in _CONNECTION_KINDS:
            if isinstance(link, kind):
                return f"{name}: {link}"
    for link in chain:
        if type(link).__name__ in _CLOSED_BY_SERVER:
            return f"connection closed by the server: {link}".rstrip(": ")
    for link in chain:
        if isinstance(link, ConnectionError) or type(link).__name__ in _NOT_CONNECTED:
            return f"connection failed: {type(link).__name__}: {link}"
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and all(link is not seen for seen in chain):
        chain.append(link)
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
    return chain


def _retry_after(exc: BaseException) -> float | None:
    headers: Any = None
    response = getattr(exc, "response", None)
    if response is not None:
        headers = getattr(response, "headers", None)
    headers = headers or getattr(exc, "litellm_response_headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to backoff


def backoff(
    policy: RetryPolicy, retry: int, retry_after: float | None, rng: random.Random
) -> float:
    """Seconds to wait before retry number ``retry`` (1-based)."""
    if retry_after is not None:
        return min(retry_after, policy.max_wait_s)
    ceiling = min(policy.max_wait_s, policy.initial_wait_s * 2 ** (retry - 1))
    return rng.uniform(0, ceiling)


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_failure: Callable[[Failure], None] = lambda f: None,
    sleep: Callable[[float], Awaitable[Any]] | None = None,
) -> tuple[T, int]:
    """Run ``call`` until it succeeds; return its result and the retries it took.

    The first attempt runs bare (most calls succeed, and tenacity's machinery costs a
    fraction of a millisecond a call); only a transient failure enters the retry loop.

    Raises:
        ModelCallError: A permanent failure, or transient ones outlasting the policy.
    """
    import asyncio

    try:
        return await call(), 0
    except Exception as exc:
        failure = classify(exc)
        if failure is None:
            raise
        on_failure(failure)
        if not failure.transient or policy.max_retries < 1:
            raise _given_up(exc, failure, retries=0) from exc
        first_wait = failure.retry_after

    from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

    rng = random.Random()
    pause = sleep or asyncio.sleep

    def transient(exc: BaseException) -> bool:
        failure = classify(exc)
        if failure is not None:
            on_failure(failure)
        return failure is not None and failure.transient

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        failure = classify(exc) if exc else None
        retry = state.attempt_number + 1  # the bare first attempt came before
        return backoff(policy, retry, failure.retry_after if failure else None, rng)

    await pause(backoff(policy, 1, first_wait, rng))
    retrying = AsyncRetrying(
        retry=retry_if_exception(transient),
        stop=stop_after_attempt(policy.max_retries),
        wait=wait,
        sleep=pause,
        reraise=True,
    )
    attempts = 1
    try:
        async for attempt in retrying:
            with attempt:
                attempts += 1
                result = await call()
    except Exception as exc:
        failure = classify(exc)
        if failure is None:
            raise
        raise _given_up(exc, failure, retries=attempts - 1) from exc
    return result, attempts - 1


def _given_up(exc: BaseException, failure: Failure, retries: int) -> ModelCallError:
    message = connection_failure(exc) or f"{type(exc).__name__}: {exc}".strip()
    return ModelCallError(
        message,
        status=failure.status,
        transient=failure.transient,
        retries=retries,
    )
