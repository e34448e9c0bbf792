"""A small static C program that gem-eval puts into containers (the container's init,
the verifier's tracer): compiled on this machine with its C compiler (``$CC``, ``cc`` or
``gcc``) and its static libc, once per machine (cached, see :mod:`gem_eval.cache`), read
once per process. No registry or download is involved; a machine that cannot compile it
(no compiler, no static libc, an engine of another OS or architecture) gets ``None`` and
the caller's fallback.
"""

from __future__ import annotations

import hashlib
import io
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from gem_eval.cache import CacheEntry, CacheError, cache_dir
from gem_eval.errors import SandboxError

_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_FLAGS = ("-static", "-Os", "-s")


def host_arch() -> str:
    """This machine's architecture, named as Docker names it (``amd64``, ``arm64``)."""
    machine = platform.machine().lower()
    return _GO_ARCH.get(machine, machine)


class StaticProgram:
    """A C program (``source``), cached under ``name`` (its file name starts so).

    ``arches``: the engine architectures the source supports (``None``: any)."""

    def __init__(self, name: str, source: str, arches: tuple[str, ...] | None = None) -> None:
        self.name, self.source, self.arches = name, source, arches
        self._lock = threading.Lock()
        self._built: dict[str, bytes | None] = {}

    def binary(self, engine_os: str, engine_arch: str) -> bytes | None:
        """The program for an engine of that OS and architecture, or ``None`` when this
        machine cannot make one. Blocking: call it in a thread."""
        if sys.platform != "linux" or engine_os != "linux" or engine_arch != host_arch():
            return None
        if self.arches is not None and engine_arch not in self.arches:
            return None
        with self._lock:
            if engine_arch not in self._built:
                self._built[engine_arch] = self._compile_cached()
            return self._built[engine_arch]

    def _compile_cached(self) -> bytes | None:
        compiler = _compiler()
        if compiler is None:
            return None
        digest = hashlib.sha256(f"{self.source}{_FLAGS}".encode()).hexdigest()[:12]
        path = cache_dir("init") / f"{self.name}-{host_arch()}-{digest}"
        entry = CacheEntry(path, _is_elf)
        try:
            entry.ensure(lambda out: self._compile(compiler, out))
            return entry.path.read_bytes()
        except (OSError, subprocess.SubprocessError, CacheError):
            return None  # no static libc, say: the caller's fallback serves

    def _compile(self, compiler: str, out: Path) -> None:
        with tempfile.TemporaryDirectory(prefix=f"{self.name}-") as tmp:
            source = Path(tmp) / f"{self.name}.c"
            source.write_text(self.source)
            subprocess.run(
                [compiler, *_FLAGS, "-o", str(out), str(source)],
                check=True,
                capture_output=True,
                timeout=120,
            )


def _compiler() -> str | None:
    for name in (os.environ.get("CC", ""), "cc", "gcc"):
        found = shutil.which(name) if name else None
        if found:
            return found
    return None


def _is_elf(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(4) == b"\x7fELF"


async def put_programs(container: Any, directory: str, files: dict[str, bytes], what: str) -> None:
    """Put ``files`` (programs: mode 0755) in a new directory ``directory`` under
    ``/tmp`` (root's, mode 0700) of a Docker ``container``, through the engine, not by a
    program in the container.

    Raises:
        SandboxError: The engine refused the archive (``what`` names the step).
    """
    from gem_eval.sandbox import docker_client

    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        top = tarfile.TarInfo(directory.lstrip("/").split("/", 1)[1])
        top.type, top.mode = tarfile.DIRTYPE, 0o700
        tar.addfile(top)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top.name}/{name}")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    if not await docker_client.call(what, container.put_archive, "/tmp", archive.getvalue()):
        raise SandboxError(f"{what}: Docker refused the archive")
