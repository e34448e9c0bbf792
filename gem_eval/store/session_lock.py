"""The session lock: one process plays a run at a time.

A process playing a run (``gem-eval run``, its ``--resume``, ``rollout``) holds an
exclusive ``flock`` on the run directory's ``.session.lock`` while it plays. A second
``--resume`` of the same run is refused at once instead of playing the same episodes
twice (paying for them twice). The lock goes with its process, however it ends, so a
run whose manifest still says ``running`` while nobody holds it was killed (SIGKILL, a
crash, a reboot): ``results list`` and ``results show`` say so, and ``--resume`` takes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from gem_eval.errors import UserError

LOCK_FILE = ".session.lock"


class RunBusyError(UserError):
    """Another process is playing the run."""


def _busy_error(run_dir: Path) -> RunBusyError:
    return RunBusyError(
        f"run {run_dir.name} is being played by another process: wait for it to end "
        "(or stop it) before resuming it"
    )


@contextlib.contextmanager
def playing(run_dir: Path) -> Iterator[None]:
    """Hold the run's session lock while the block plays it.

    Raises:
        RunBusyError: Another process holds it.
    """
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise _busy_error(run_dir) from None
    try:
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


def is_played(run_dir: Path) -> bool:
    """Whether a process (this one included) is playing the run now."""
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # never played since the lock existed, or not readable: nobody
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def check_free(run_dir: Path) -> None:
    """Raise :class:`RunBusyError` when another process plays the run (the early check
    of ``--resume``, before its models start; :func:`playing` is the one that counts)."""
    if is_played(run_dir):
        raise _busy_error(run_dir)
