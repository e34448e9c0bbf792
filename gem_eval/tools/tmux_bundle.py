"""Where the terminal's tmux comes from: one copy that runs in any container.

Task images rarely ship tmux (``python:3.13-slim``, ``debian``, ``ubuntu`` and the local
base image do not), and installing it into a task's container would need the task's
network and package manager and would change what the task's tests see. So gem-eval
brings its own: Debian bookworm's tmux with the shared libraries it links and the
dynamic loader they were built for, in one directory (:data:`DIR`) copied into the
container (one ``put_archive``, root's, read-only to the agent) before the session
starts, and run through that loader (``ld.so --library-path DIR/lib DIR/tmux``). It
relies on nothing of the image's but ``/bin/sh`` (to start it) and a writable ``/tmp``
(the server's socket), so it runs the same in glibc and musl images of any release. The
shell tmux starts in its pane is the image's own (an ``exec`` leaves the bundled
loader behind).

The directory is made once per machine: an image built from the base image
(``apt-get install tmux`` from the Debian mirror the base image's apt names; cached by
content as every built image is, see :func:`~gem_eval.sandbox.images.build_image`),
whose files are read once per process. Sandboxes that are not containers (bubblewrap)
run the host's ``tmux``.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from gem_eval.errors import SandboxError

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox

DIR = "/.gem-eval-tmux"
"""Where the bundle lives in a container."""

DOCKERFILE = """\
FROM gem-eval/base:bookworm
RUN apt-get update \\
 && apt-get install -y --no-install-recommends tmux \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /gem-eval-tmux/lib \\
 && cp /usr/bin/tmux /gem-eval-tmux/tmux \\
 && for lib in $(ldd /usr/bin/tmux | awk '$2 == "=>" {print $3}'); do \\
      cp -L "$lib" /gem-eval-tmux/lib/; done \\
 && cp -L "$(ldd /usr/bin/tmux | awk '$1 ~ /^\\// {print $1}')" /gem-eval-tmux/lib/ld.so \\
 && /gem-eval-tmux/lib/ld.so --library-path /gem-eval-tmux/lib /gem-eval-tmux/tmux -V
"""
"""The bundle's recipe: tmux from Debian, its libraries (``ldd``) and their loader."""

_lock = threading.Lock()
_bundle: bytes | None = None
_installed: weakref.WeakKeyDictionary[Sandbox, bool] = weakref.WeakKeyDictionary()


def argv(sandbox: Sandbox) -> list[str]:
    """The command that runs tmux in ``sandbox`` (after :func:`install`)."""
    if not in_container(sandbox):
        return ["tmux"]
    return [f"{DIR}/lib/ld.so", "--library-path", f"{DIR}/lib", f"{DIR}/tmux"]


async def install(sandbox: Sandbox) -> None:
    """Copy the bundle into ``sandbox`` unless it is there (containers only).

    Raises:
        SandboxError: The bundle could not be made or copied.
    """
    if not in_container(sandbox) or _installed.get(sandbox):
        return
    from gem_eval.sandbox import docker_client

    data = await docker_client.in_thread(bundle)
    container = getattr(sandbox, "container", None)
    if container is None:
        raise SandboxError("copying tmux in: the sandbox is not started")
    api = docker_client.client().api
    ok = await docker_client.call("copying tmux in", api.put_archive, container.id, "/", data)
    if not ok:
        raise SandboxError("copying tmux in: Docker refused the archive")
    _installed[sandbox] = True


def bundle() -> bytes:
    """The bundle as a tar to unpack at ``/`` (made, or read, once per process).
    Blocking."""
    global _bundle
    with _lock:
        if _bundle is None:
            _bundle = _make()
        return _bundle


def _make() -> bytes:
    from gem_eval.sandbox.bundle import directory_bundle

    return directory_bundle(DOCKERFILE, "/gem-eval-tmux", DIR)


def in_container(sandbox: Sandbox) -> bool:
    """Whether ``sandbox`` is a container (its processes share one PID namespace)."""
    from gem_eval.sandbox.docker import DockerSandbox

    return isinstance(sandbox, DockerSandbox)
