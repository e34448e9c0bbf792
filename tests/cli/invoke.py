"""``gem-eval`` in this process, through its real entry point (:func:`gem_eval.cli.main`),
so that what a user sees is what is tested: the exit code and both streams."""

from __future__ import annotations

import contextlib
import io
import logging
from dataclasses import dataclass


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        """stderr's non-empty lines."""
        return [line for line in self.stderr.splitlines() if line.strip()]


def gem_eval(*argv: str) -> Result:
    """Run ``gem-eval ARGV`` as the script does; an exception that escapes ``main``
    (a traceback a user would see) is raised here."""
    import signal

    from gem_eval.cli import main

    out, err = io.StringIO(), io.StringIO()
    handler = signal.getsignal(signal.SIGTERM)
    code: int | str | None = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(list(argv))
    except SystemExit as exc:
        code = exc.code
    finally:
        signal.signal(signal.SIGTERM, handler)
        _forget_log_handlers()
    if code is None:
        code = 0
    assert isinstance(code, int), code
    return Result(code, out.getvalue(), err.getvalue())


def _forget_log_handlers() -> None:
    """The run's log handler holds the stderr of the call that made it: the next call
    makes its own."""
    logger = logging.getLogger("gem_eval")
    for handler in list(logger.handlers):
        if getattr(handler, "_gem_eval", False):
            logger.removeHandler(handler)
