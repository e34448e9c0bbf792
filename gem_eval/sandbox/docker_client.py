"""The Docker connection: one lazily made SDK client, its thread pool, and error mapping.

The ``docker`` SDK is blocking; every call goes through :func:`call` on a pool of
threads sized for many sandboxes at once (asyncio's default pool has only cpu + 4).
Docker's own exceptions become one-line gem-eval errors here, so nothing else needs to
know them: a missing SDK, engine or image is :class:`SandboxUnavailableError` (a user
can fix it, reported before a run); anything else is :class:`SandboxError` (an
infrastructure failure, recorded as ``infra_error``).
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from gem_eval.errors import SandboxError, SandboxUnavailableError

T = TypeVar("T")
_THREADS = 32
_lock = threading.Lock()
_client: Any = None
_pool: ThreadPoolExecutor | None = None


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
    """Run a blocking SDK call on the Docker thread pool; errors come back translated."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="gem-eval-docker")
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(_pool, lambda: fn(*args, **kwargs))
    except (SandboxError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise translate(exc, what) from exc
