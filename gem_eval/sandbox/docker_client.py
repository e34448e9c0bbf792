"""The Docker connection: one lazily made SDK client, its thread pool, and error mapping.

The ``docker`` SDK is blocking; every call goes through :func:`call`, in a thread of its
own (asyncio's default pool has only cpu + 4 threads, too few for many sandboxes).
Docker's own exceptions become one-line gem-eval errors here, so nothing else needs to
know them: a missing SDK, engine or image is :class:`SandboxUnavailableError` (a user
can fix it, reported before a run); anything else is :class:`SandboxError` (an
infrastructure failure, recorded as ``infra_error``).
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
_lock = threading.Lock()
_client: Any = None


def client() -> Any:
    """The shared ``docker.DockerClient`` (made on first use, checked with a ping)."""
    global _client
    with _lock:
        if _client is None:
            try:
                import docker
            except ImportError:
                raise SandboxUnavailableError(
                    "the docker SDK is not installed: pip install 'gem-eval[sandbox]'"
                ) from None
            try:
                made = docker.from_env(max_pool_size=_THREADS, timeout=120)
                made.ping()
            except Exception as exc:
                raise _unavailable(exc) from None
            _client = made
        return _client


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


def translate(exc: BaseException, what: str) -> Exception:
    """A gem-eval error for a Docker SDK exception raised while doing ``what``."""
    from docker import errors

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
    if isinstance(exc, (errors.DockerException, OSError)):
        return SandboxError(f"{what}: {message}")
    return exc if isinstance(exc, Exception) else SandboxError(message)


async def call(what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking SDK call in a daemon thread; errors come back translated.

    Daemon threads, not a ``ThreadPoolExecutor``: the interpreter joins an executor's
    threads at exit, so one SDK call stuck on a dying daemon would hold a finished run's
    process open. (A call takes milliseconds; starting a thread costs microseconds.)
    """
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
            outcome = (fn(*args, **kwargs), None)
        except BaseException as exc:
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed while we worked
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="gem-eval-docker", daemon=True).start()
    try:
        return await future
    except (SandboxError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise translate(exc, what) from exc
