"""tmux and asciinema for Terminus-2 in a container that cannot fetch them.

Terminus-2's setup installs tmux and asciinema with the image's package manager, as
under ``harbor run`` (``apt-get`` in a Debian image). A container without network (a
task's ``allow_internet = false``, ``--no-network``) cannot: its setup then spends
minutes failing and the episode is lost. There gem-eval puts both in first, from Debian
bookworm (what ``apt-get`` gives Terminus-2 in a bookworm image), and Terminus-2, which
checks ``tmux -V`` and ``asciinema --version`` before installing, installs nothing:

* tmux: gem-eval's own bundle (:mod:`gem_eval.tools.tmux_bundle`), run by
  ``/usr/local/bin/tmux``;
* asciinema (pure Python): Debian's package files in ``/.gem-eval-asciinema``, run by
  ``/usr/local/bin/asciinema`` with the image's ``python3`` (no python3: no recording,
  as under Harbor when asciinema cannot be installed).

A container with network is left to Terminus-2's own setup.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from gem_eval.tools import tmux_bundle

if TYPE_CHECKING:
    from gem_eval.sandbox.base import Sandbox

ASCIINEMA_DIR = "/.gem-eval-asciinema"
ASCIINEMA_DOCKERFILE = """\
FROM gem-eval/base:bookworm
RUN apt-get update \\
 && apt-get install -y --no-install-recommends asciinema \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir /gem-eval-asciinema \\
 && cp -r /usr/lib/python3/dist-packages/asciinema /gem-eval-asciinema/ \\
 && printf 'import sys\\nfrom asciinema.__main__ import main\\nsys.exit(main())\\n' \\
      > /gem-eval-asciinema/run.py \\
 && python3 /gem-eval-asciinema/run.py --version
"""
"""Debian's asciinema, its package directory and a script that runs it."""
_TMUX = f"""#!/bin/sh
exec {tmux_bundle.DIR}/lib/ld.so --library-path {tmux_bundle.DIR}/lib {tmux_bundle.DIR}/tmux "$@"
"""
_ASCIINEMA = f"""#!/bin/sh
exec python3 {ASCIINEMA_DIR}/run.py "$@"
"""
_lock = threading.Lock()
_asciinema: bytes | None = None


async def provide(sandbox: Sandbox) -> list[str]:
    """Put in what the sandbox lacks of tmux and asciinema; the tools put in.

    Raises:
        SandboxError: A bundle could not be made or copied in.
    """
    from gem_eval.sandbox import docker_client

    if not tmux_bundle.in_container(sandbox):
        return []
    missing = await sandbox.run_root(
        "for t in tmux asciinema; do command -v $t >/dev/null || echo $t; done; "
        "python3 -c 'import sys; sys.exit(sys.version_info < (3, 7))' 2>/dev/null "
        "|| echo no-python3",
        "looking for tmux",
    )
    wanted = missing.split()
    put: list[str] = []
    if "tmux" in wanted:
        await tmux_bundle.install(sandbox)
        await sandbox.write_file("/usr/local/bin/tmux", _TMUX, mode=0o755, owner="root")
        put.append("tmux")
    if "asciinema" in wanted and "no-python3" not in wanted:
        data = await docker_client.in_thread(_asciinema_bundle)
        await _unpack(sandbox, data)
        await sandbox.write_file("/usr/local/bin/asciinema", _ASCIINEMA, mode=0o755, owner="root")
        put.append("asciinema")
    return put


async def _unpack(sandbox: Sandbox, data: bytes) -> None:
    from gem_eval.errors import SandboxError
    from gem_eval.sandbox import docker_client

    container = getattr(sandbox, "container", None)
    if container is None:
        raise SandboxError("copying asciinema in: the sandbox is not started")
    api = docker_client.client().api
    ok = await docker_client.call("copying asciinema in", api.put_archive, container.id, "/", data)
    if not ok:
        raise SandboxError("copying asciinema in: Docker refused the archive")


def _asciinema_bundle() -> bytes:
    """The asciinema directory as a tar to unpack at ``/`` (made once per process; its
    image is cached by content as every built image is). Blocking."""
    global _asciinema
    with _lock:
        if _asciinema is None:
            _asciinema = _make()
        return _asciinema


def _make() -> bytes:
    from gem_eval.sandbox.bundle import directory_bundle

    return directory_bundle(ASCIINEMA_DOCKERFILE, "/gem-eval-asciinema", ASCIINEMA_DIR)
