"""The ``gem-eval`` command line. Thin: parse options, call the library, render."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``gem-eval`` script.

    A :class:`~gem_eval.errors.UserError` prints ``error: <message>`` on one line and
    exits with code 2; Ctrl-C exits with 130.
    """
    from gem_eval.cli.app import app
    from gem_eval.errors import UserError

    try:
        app(args=argv, prog_name="gem-eval", standalone_mode=True)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
