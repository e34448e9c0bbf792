"""The ``gem-eval`` command line. Thin: parse options, call the library, render."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``gem-eval`` script.

    A :class:`~gem_eval.errors.UserError` prints ``error: <message>`` on one line and
    exits with code 2; any other gem-eval error (a server that would not start ...) prints
    one line and exits with 1 (set ``GEM_EVAL_DEBUG=1`` for the traceback). Ctrl-C exits
    with 130 (Typer's handling).
    """
    import os
    import signal

    from gem_eval.cli.app import app
    from gem_eval.cli.streams import guard_std_streams
    from gem_eval.errors import GemEvalError, UserError

    guard_std_streams()  # `gem-eval ... | head`: a reader that leaves is no failure

    # litellm would fetch its price list from GitHub at import (and warn three times when
    # offline): the copy it ships is enough. A user's own setting wins.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # SIGTERM exits like Ctrl-C does, through exit handlers: local model servers and
    # (later) containers are stopped instead of leaking.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(130))
    try:
        app(args=argv, prog_name="gem-eval", standalone_mode=True)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except GemEvalError as exc:
        if os.environ.get("GEM_EVAL_DEBUG"):
            raise
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
