"""The ``gem-eval`` command line. Thin: parse options, call the library, render."""

from __future__ import annotations

import sys
from typing import Any


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``gem-eval`` script.

    A :class:`~gem_eval.errors.UserError`, or a mistake Click finds in the options (an
    unknown option, a value out of range), prints ``error: <message>`` on one line and
    exits with code 2; any other gem-eval error (a server that would not start ...) prints
    one line and exits with 1 (set ``GEM_EVAL_DEBUG=1`` for the traceback). Ctrl-C exits
    with 130 (Typer's handling).
    """
    import os
    import signal

    import typer

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
    clicks = click_exceptions()
    try:
        # Not standalone: Click's own errors come here, to be printed as gem-eval's are.
        code = app(args=argv, prog_name="gem-eval", standalone_mode=False)
    except _NoArgsIsHelp(clicks) as exc:  # `gem-eval suites`: the help, as Click shows it
        exc.show()
        sys.exit(exc.exit_code)
    except clicks.ClickException as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:  # a prompt answered with Ctrl-C or end of input
        print("error: aborted", file=sys.stderr)
        sys.exit(1)
    except UserError as exc:
        print(f"error: {_printable(str(exc))}", file=sys.stderr)
        sys.exit(2)
    except GemEvalError as exc:
        if os.environ.get("GEM_EVAL_DEBUG"):
            raise
        print(f"error: {_printable(str(exc))}", file=sys.stderr)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def click_exceptions() -> Any:
    """The exceptions module of the Click that Typer runs on: Typer >= 0.29 vendors it as
    ``typer._click`` (whose classes are not the installed ``click``'s), older Typer
    imports ``click`` itself."""
    import typer.core

    vendored = getattr(typer.core, "_click", None)
    if vendored is not None:
        return vendored.exceptions
    import click

    return click.exceptions


def _NoArgsIsHelp(clicks: Any) -> Any:
    """Click >= 8.2's error that shows a group's help; a class never raised before."""
    return getattr(clicks, "NoArgsIsHelpError", _Never)


class _Never(Exception):
    pass


def _printable(message: str) -> str:
    """``message`` on one line whatever it quotes: control characters (a line break, a
    carriage return in a name the user gave or an engine's reply) shown escaped."""
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode()
        for ch in message
    )


def _one_line(exc: Any) -> str:
    """A Click error as one line: its message, and where to read the command's help."""
    message = " ".join(exc.format_message().split()).removesuffix(".")
    if message[1:2].islower():  # "Invalid value ...": as gem-eval's own lines begin
        message = message[0].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        return f"{message} (see {ctx.command_path} {ctx.help_option_names[0]})"
    return message
