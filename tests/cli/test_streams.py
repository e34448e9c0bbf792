"""A stream whose reader left goes quiet (to /dev/null) instead of raising."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TextIO, cast

import pytest

from gem_eval.cli.streams import _Guarded, write_line


def _is_devnull(fd: int) -> bool:
    here, null = os.fstat(fd), os.stat(os.devnull)
    return (here.st_dev, here.st_ino) == (null.st_dev, null.st_ino)


@pytest.fixture
def orphan() -> Iterator[TextIO]:
    """A text stream on a pipe nobody reads any more."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = os.fdopen(write_end, "w")
    yield stream
    stream.close()


def test_a_line_to_a_pipe_nobody_reads_is_dropped_and_the_stream_goes_quiet(
    orphan: TextIO,
) -> None:
    with pytest.raises(BrokenPipeError):  # what a plain print meets
        print("lost", file=orphan, flush=True)
    write_line(orphan, "dropped")
    assert _is_devnull(orphan.fileno())
    write_line(orphan, "and the next one too")  # no error: /dev/null takes it


def test_a_guarded_stream_never_raises_a_broken_pipe(orphan: TextIO) -> None:
    guarded = cast(TextIO, _Guarded(orphan))
    assert guarded.write("x" * 100_000) == 100_000  # more than a pipe holds
    guarded.flush()
    print("more", file=guarded, flush=True)
    assert _is_devnull(guarded.fileno())  # everything else is the wrapped stream's


def test_a_live_pipe_is_left_alone() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as stream:
        write_line(stream, "hello")
        assert not _is_devnull(write_end)
    assert os.read(read_end, 100) == b"hello\n"
    os.close(read_end)


def test_any_command_to_a_closed_pipe_exits_quietly() -> None:
    """``gem-eval envs list | head -0``: the reader is gone before the first line."""
    import subprocess

    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gem_eval", "envs", "list"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
