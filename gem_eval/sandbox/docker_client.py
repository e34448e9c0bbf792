"""The Docker connection: one lazily made SDK client, its thread pool, and error mapping.

The ``docker`` SDK is blocking; every call goes through :func:`call`, in a thread of its
own (asyncio's default pool has only cpu + 4 threads, too few for many sandboxes).
Docker's own exceptions become one-line gem-eval errors here, so nothing else needs to
know them: a missing SDK, engine or image is :class:`SandboxUnavailableError` (a user
can fix it, reported before a run); anything else is :class:`SandboxError` (an
infrastructure failure, recorded as ``infra_error``).

The engine may go away mid-run (the daemon restarts). A call that cannot reach it marks
it down (see :mod:`gem_eval.sandbox.engine`), and new sandboxes wait for it there.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from gem_eval.errors import SandboxError, SandboxUnavailableError

T = TypeVar("T")
_THREADS = 32
_PING_TIMEOUT_S = 2
_lock = threading.Lock()
_client: Any = None


def client() -> Any:
    """The shared ``docker.DockerClient`` (made on first use, checked with a ping).

    It reaches the engine ``DOCKER_HOST`` names (the local socket when unset)."""
    global _client
    with _lock:
        if _client is None:
            try:
                import docker
            except ImportError:
                raise SandboxUnavailableError(
                    "the docker SDK is not installed: pip install gem-eval (it depends on it)"
                ) from None
            try:
                made = docker.from_env(max_pool_size=_THREADS, timeout=120)
                made.ping()
            except Exception as exc:
                raise _unavailable(exc) from None
            _client = made
        return _client


def in_use() -> bool:
    """Whether this process has talked to Docker (made the client)."""
    return _client is not None


def ping() -> bool:
    """Whether the engine answers a ping within two seconds (blocking; never raises).

    Over a new connection: a stopping daemon closes its socket first but goes on
    answering on connections already open (the shared client's), while it stops every
    container."""
    try:
        import docker

        # The API version given: otherwise the SDK asks the engine while connecting.
        version = None if _client is None else _client.api.api_version
        pinger = docker.from_env(version=version, timeout=_PING_TIMEOUT_S)
        try:
            return bool(pinger.ping())
        finally:
            pinger.close()
    except Exception:
        return False


async def container_running(container_id: str) -> bool:
    """Whether the container exists and runs (``False`` when the engine is away)."""
    try:
        info = await call("checking a container", client().api.inspect_container, container_id)
    except SandboxError:
        return False
    return bool((info.get("State") or {}).get("Running"))


def _unavailable(exc: BaseException) -> SandboxUnavailableError:
    if shutil.which("dockerd") is None and shutil.which("docker") is None:
        return SandboxUnavailableError(
            "Docker is not installed: apt-get install docker.io (then start dockerd)"
        )
    return SandboxUnavailableError(
        f"Docker is not running (cannot reach the daemon: {_first_line(exc)}); "
        "start it with `dockerd &` or `systemctl start docker`"
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the engine could not be reached (a refused, missing or
    dropped socket), as opposed to an answer from it (a 404 container, a 409 conflict)."""
    try:
        from requests.exceptions import ConnectionError as RequestsConnectionError
    except ImportError:  # no SDK, so no call reached this far
        return False
    return isinstance(exc, (RequestsConnectionError, ConnectionError, FileNotFoundError))


def translate(exc: BaseException, what: str) -> Exception:
    """A gem-eval error for a Docker SDK exception raised while doing ``what``."""
    from docker import errors

    from gem_eval.sandbox import engine

    message = _first_line(exc)
    if isinstance(exc, errors.ImageNotFound):
        return SandboxUnavailableError(
            f"{what}: image not found ({message}); build the base image with "
            "`gem-eval sandbox build-base`"
        )
    if "no space left on device" in message.lower():
        return SandboxError(f"{what}: the Docker host is out of disk space ({message})")
    if isinstance(exc, errors.NotFound):
        return SandboxError(f"{what}: the container is gone ({message})")
    if isinstance(exc, errors.APIError) and "is not running" in message:
        return SandboxError(f"{what}: the container is not running ({message})")
    if unreachable(exc) and engine.is_down():
        return SandboxError(f"{what}: {engine.UNREACHABLE} ({message})")
    if isinstance(exc, (errors.DockerException, OSError)):
        return SandboxError(f"{what}: {message}")
    return exc if isinstance(exc, Exception) else SandboxError(message)


async def call(what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking SDK call in a daemon thread; errors come back translated.

    Daemon threads, not a ``ThreadPoolExecutor``: the interpreter joins an executor's
    threads at exit, so one SDK call stuck on a dying daemon would hold a finished run's
    process open. (A call takes milliseconds; starting a thread costs microseconds.)
    A call that could not reach the engine pings it, in the same thread: no answer
    marks the engine down. (A call that succeeds proves nothing: a stopping daemon
    still answers on connections already open. Only a ping marks it up.)
    """
    from gem_eval.sandbox import engine

    def observed() -> T:
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            if unreachable(exc) and not ping():
                engine.mark_down()
            raise

    try:
        return await in_thread(observed)
    except (SandboxError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise translate(exc, what) from exc


async def in_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a daemon thread of its own, awaited (its exception re-raised as is)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():  # the caller was cancelled
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        outcome: tuple[T | None, BaseException | None]
        try:
            outcome = (fn(), None)
        except BaseException as exc:
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed while we worked
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="gem-eval-docker", daemon=True).start()
    return await future


async def engine_alive() -> bool:
    """Whether the Docker engine answers a ping now (two seconds at most; never raises).

    The answer is also recorded: no answer marks the engine down, one marks it up."""
    from gem_eval.sandbox import engine

    return await engine.probe()
