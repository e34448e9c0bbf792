"""Terminal-Bench 1 keystroke solutions: ``solution.yaml``, played into a tmux session.

A TB1 task may give its reference solution as keystrokes instead of ``solution.sh``,
for work a script cannot do (driving an editor, a REPL, a prompt)::

    - command: vim notes.txt        # text or a tmux key name (C-c, Escape, ...)
      min_timeout_sec: 0.5          # wait at least this long after sending (0)
    - command: Escape
      append_enter: false           # press Enter after it (default true)
    - command: python3 build.py
      block: true                   # wait until the command has finished
      max_timeout_sec: 600          # ... for at most this long (180)

This reads that list (the fields and defaults of Terminal-Bench's ``TerminalCommand``,
other keys ignored as its model ignores them) and plays it as its harness does, through
the same tmux session code as the ``terminal`` tool (:mod:`gem_eval.tools.tmux`): each
command's keys are sent (``command``, then Enter when ``append_enter``); a command that
blocks and ends in Enter has the Enter taken off, a completion signal typed after it
(TB1 types ``; tmux wait -S done``; here ``; printf`` of an escape sequence the terminal
does not display, seen in tmux's output stream), then Enter, and is waited for up to
``max_timeout_sec``; any other command is followed by a pause of ``min_timeout_sec``. A
blocking command that times out ends the solution there (TB1's harness raises).
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gem_eval.errors import TaskFormatError
from gem_eval.sandbox.base import Sandbox
from gem_eval.tools.tmux import TmuxSession

ENTER_KEYS = frozenset({"Enter", "C-m", "KPEnter", "C-j", "^M", "^J"})
"""Keys that run what was typed (TB1's list)."""
_OSC = "7717"  # an operating-system-command number no terminal acts on


@dataclass(frozen=True)
class KeystrokeCommand:
    """One entry of ``solution.yaml`` (Terminal-Bench's ``TerminalCommand``)."""

    command: str
    min_timeout_sec: float = 0.0
    max_timeout_sec: float = 180.0
    block: bool = False
    append_enter: bool = True

    def keys(self) -> tuple[list[str], bool]:
        """The keys to send and whether to wait for completion (TB1's ``_prepare_keys``):
        blocking applies only when the last key runs what was typed."""
        keys = [self.command, "Enter"] if self.append_enter else [self.command]
        if not self.block or not _runs(keys[-1]):
            return keys, False
        while keys and _runs(keys[-1]):
            if keys[-1] in ENTER_KEYS:
                keys.pop()
            else:
                keys[-1] = keys[-1].rstrip("\r\n")
                if not keys[-1]:
                    keys.pop()
        return keys, True


def _runs(key: str) -> bool:
    return key in ENTER_KEYS or key.endswith(("\r", "\n"))


def load_commands(path: Path) -> list[KeystrokeCommand]:
    """The commands of a ``solution.yaml``.

    Raises:
        TaskFormatError: Not a list of commands, or a field of the wrong type (with the
            entry's line).
    """
    text = path.read_text()
    try:
        data = yaml.safe_load(text)
        nodes = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TaskFormatError(path, str(exc), mark.line + 1 if mark else None) from None
    if not isinstance(data, list) or not isinstance(nodes, yaml.SequenceNode):
        raise TaskFormatError(path, "must be a list of commands (- command: ...)", 1)
    return [
        _command(entry, path, node.start_mark.line + 1)
        for entry, node in zip(data, nodes.value, strict=True)
    ]


def _command(entry: Any, path: Path, line: int) -> KeystrokeCommand:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        raise TaskFormatError(path, "each entry needs `command` (a string)", line)
    fields: dict[str, Any] = {"command": entry["command"]}
    for key in ("min_timeout_sec", "max_timeout_sec"):
        if key in entry:
            value = entry[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise TaskFormatError(path, f"{key} must be a number >= 0", line)
            fields[key] = float(value)
    for key in ("block", "append_enter"):
        if key in entry:
            if not isinstance(entry[key], bool):
                raise TaskFormatError(path, f"{key} must be true or false", line)
            fields[key] = entry[key]
    return KeystrokeCommand(**fields)


async def play(
    sandbox: Sandbox,
    commands: list[KeystrokeCommand],
    *,
    user: str | None = None,
    cwd: str | None = None,
) -> str:
    """Play ``commands`` into a fresh tmux session in ``sandbox`` (see the module
    docstring); what happened and the screen at the end."""
    session = TmuxSession(sandbox, user=user, cwd=cwd)
    await session.start()
    nonce = secrets.token_hex(6)
    status = f"all {len(commands)} commands sent"
    try:
        for number, command in enumerate(commands, start=1):
            keys, blocking = command.keys()
            sent = time.monotonic()
            if not blocking:
                await session.send_keys(keys)
                await asyncio.sleep(max(0.0, command.min_timeout_sec - (time.monotonic() - sent)))
                continue
            token = f"gem-eval-done-{nonce}-{number}"
            since = session.mark()
            # The format spells the token out only in the output, never in the typed echo.
            signal = f"; printf '\\033]{_OSC};%s\\007' {token}"
            await session.send_keys([*keys, signal, "Enter"])
            limit = None if math.isinf(command.max_timeout_sec) else command.max_timeout_sec
            done = f"\x1b]{_OSC};{token}\x07".encode()
            if not await session.wait_for_output(done, since, limit):
                what = "the session ended" if not session.alive else "timed out"
                status = (
                    f"command {number} ({command.command!r}) {what} "
                    f"after {time.monotonic() - sent:.0f} s"
                )
                break
        screen = await session.capture() if session.alive else "(the session has ended)"
    finally:
        await session.close()
    return f"[solution.yaml: {status}]\n{screen}"
