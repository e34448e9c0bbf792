"""Standard streams that a reader may close: ``gem-eval run ... | head`` must still finish.

Once the reader of a pipe is gone, every write to it raises ``BrokenPipeError``: a
progress line would fail the run (the runner stops at a failing sink), a rich print
would exit 1 (rich's ``on_broken_pipe``), and Python's flush of the streams at exit
would print a traceback and exit 120. The results are what matters, so a closed pipe
silences the stream instead: its descriptor (and the other standard one, when it is the
same pipe: ``2>&1``) is pointed at ``/dev/null``, as Python's documentation advises
(https://docs.python.org/3/library/signal.html#note-on-sigpipe), and the run goes on.
Pointing the descriptor, not only the Python object, at ``/dev/null`` quiets every
writer at once: the logging handler, rich, the final flush and child processes.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO, Any, TextIO, cast

_STANDARD_FDS = (1, 2)


def silence(stream: IO[str]) -> None:
    """Point ``stream``'s descriptor at ``/dev/null``, and the standard descriptors that
    share its pipe (``2>&1``). What the stream still buffers then drains there."""
    try:
        fd = stream.fileno()
        broken = os.fstat(fd)
    except (AttributeError, OSError, ValueError):  # no descriptor: nothing to point
        return
    targets = {fd}
    for other in _STANDARD_FDS:
        with contextlib.suppress(OSError):
            st = os.fstat(other)
            if (st.st_dev, st.st_ino) == (broken.st_dev, broken.st_ino):
                targets.add(other)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for target in targets:
            os.dup2(devnull, target)
    finally:
        os.close(devnull)


def write_line(stream: IO[str], text: str) -> None:
    """Write ``text`` and a newline, flushed; a reader that left silences the stream
    (the line is dropped) instead of raising."""
    try:
        stream.write(text + "\n")
        stream.flush()
    except BrokenPipeError:
        silence(stream)
        with contextlib.suppress(OSError, ValueError):  # the rest drains to /dev/null
            stream.flush()


class _Guarded:
    """A text stream whose writes and flushes never raise ``BrokenPipeError``; all else
    is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.guarded = stream

    def write(self, text: str) -> int:
        try:
            return self.guarded.write(text)
        except BrokenPipeError:
            self._silence()
            return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.guarded.flush()
        except BrokenPipeError:
            self._silence()

    def _silence(self) -> None:
        silence(self.guarded)
        with contextlib.suppress(OSError, ValueError):
            self.guarded.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.guarded, name)


def guard_std_streams() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` survive a reader that leaves (idempotent).

    Call it before the objects that keep a reference to a stream are made (the progress
    display, logging handlers); rich's consoles look ``sys.stdout`` up at each print."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _Guarded):
            setattr(sys, name, cast(TextIO, _Guarded(stream)))
