"""The on-disk cache gem-eval fills, and how one entry in it is made safely.

The cache lives in ``$GEM_EVAL_CACHE``, or ``~/.cache/gem-eval`` when that is unset; each
kind of entry has its own directory (``images``, ``services``, ``search``, ``models``).

Several episodes (threads) and several gem-eval processes may want one entry at the same
time, and a process may die while it writes one. So a :class:`CacheEntry` is

* built by one caller at a time: under a per-entry lock that holds across threads (a
  ``threading.Lock``) and processes (``flock`` on a sibling ``.<name>.lock`` file; a flock
  belongs to an open file description, so the thread lock keeps one process's threads
  from each opening the file and queueing in the kernel);
* built into a unique temporary path beside it, checked, then renamed into place: a
  reader sees no entry or a whole one, never a half-written one;
* checked before each use: an entry that fails its check (left by an older version, a
  crash between steps, a hand edit) is rebuilt under the lock.

A directory entry carries a manifest (every file's path and size), written after the
build, so a directory missing a file or holding a truncated one is not used.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from gem_eval.errors import GemEvalError

MANIFEST = ".gem-eval-manifest.json"
"""The file in a directory entry that lists its files and their sizes."""

Check = Callable[[Path], bool]
"""Whether the entry at a path is complete and usable (it exists when called)."""


class CacheError(GemEvalError):
    """A cache entry could not be made: its builder produced something its check rejects."""


def cache_root() -> Path:
    """``$GEM_EVAL_CACHE``, or ``~/.cache/gem-eval`` when the variable is unset or empty."""
    root = os.environ.get("GEM_EVAL_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "gem-eval"


def cache_dir(kind: str) -> Path:
    """The directory of one kind of entry, e.g. ``cache_dir("images")``."""
    return cache_root() / kind


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold the lock named by ``path`` against other threads and other processes.

    The lock file (and its directory) is created when missing and never deleted: removing
    it could let a second holder lock a new file while the first holds the old one.
    """
    key = os.path.abspath(path)
    with _thread_locks_guard:
        thread_lock = _thread_locks.setdefault(key, threading.Lock())
    with thread_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed, or the process dies
            yield
        finally:
            os.close(fd)


def write_manifest(directory: Path) -> None:
    """Record every file under ``directory`` with its size (the manifest itself aside)."""
    files = {
        str(path.relative_to(directory)): path.stat().st_size
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }
    (directory / MANIFEST).write_text(json.dumps({"version": 1, "files": files}))


def manifest_ok(directory: Path) -> bool:
    """Whether every file the manifest lists is there with its recorded size."""
    try:
        files = json.loads((directory / MANIFEST).read_text())["files"]
        return all((directory / name).stat().st_size == size for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


class CacheEntry:
    """One entry of the cache: a file or a directory at ``path`` (see the module docstring).

    Args:
        path: Where the entry lives.
        check: What makes an existing entry usable, beyond being there (and, for a
            directory, matching its manifest). Run before use and after each build.
    """

    def __init__(self, path: Path, check: Check | None = None) -> None:
        self.path = path
        self.check = check
        self.lock_path = path.with_name(f".{path.name}.lock")

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """The entry's lock (not reentrant: do not call :meth:`ensure` while holding it)."""
        return file_lock(self.lock_path)

    def ready(self) -> bool:
        """Whether the entry is there and passes its checks."""
        return self._usable(self.path)

    def ensure(self, build: Callable[[Path], object]) -> bool:
        """Make sure the entry is ready, building it when it is missing or fails its check.

        Args:
            build: Writes the entry (a file or a directory) at the path it is given, which
                does not exist yet. It may raise; nothing it wrote is then kept.

        Returns:
            True when this call built the entry, False when it was ready.

        Raises:
            CacheError: The built entry failed its check.
        """
        if self.ready():
            return False
        with self.lock():
            if self.ready():  # another thread or process built it while we waited
                return False
            self.publish(build)
            return True

    def publish(self, build: Callable[[Path], object]) -> None:
        """Build the entry afresh and put it in place; the caller holds :meth:`lock`.

        See :meth:`ensure` for ``build`` and the errors.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sweep()
        tmp = self._sibling("tmp")
        try:
            build(tmp)
            if tmp.is_dir():
                write_manifest(tmp)
            if not self._usable(tmp):
                raise CacheError(f"{self.path}: the newly built cache entry is incomplete")
            self._install(tmp)
        finally:
            _remove(tmp)

    def _usable(self, path: Path) -> bool:
        ok = manifest_ok(path) if path.is_dir() else path.is_file()
        try:
            return ok and (self.check is None or self.check(path))
        except OSError:  # replaced or removed while checked: not usable as seen
            return False

    def _sibling(self, kind: str) -> Path:
        return self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:12]}.{kind}")

    def _install(self, tmp: Path) -> None:
        """Rename ``tmp`` into place; an old entry is moved aside first (a directory
        cannot be replaced by a rename), so readers never see a mix of the two."""
        if tmp.is_file() and not self.path.is_dir():
            os.replace(tmp, self.path)
            return
        old = self._sibling("old")
        with contextlib.suppress(FileNotFoundError):
            os.rename(self.path, old)
        os.rename(tmp, self.path)
        _remove(old)

    def _sweep(self) -> None:
        """Remove what crashed builders left: under the lock, no live builder owns any."""
        leftover = re.compile(re.escape(f".{self.path.name}.") + r"[0-9a-f]{12}\.(tmp|old)")
        for path in self.path.parent.iterdir():
            if leftover.fullmatch(path.name):
                _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
