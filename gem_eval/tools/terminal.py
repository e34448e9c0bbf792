"""The ``terminal`` tool: keystrokes into a tmux session in the episode's sandbox, the
terminal read back.

As Terminal-Bench's own agents (Terminus) work: the agent types into a real terminal (a
pseudo-terminal held by tmux, ``width`` x ``height``, as the sandbox's user in its work
directory, in the user's shell) and reads what it shows, so interactive and full-screen
programs work: ``vi``, ``less``, a Python REPL, a prompt that asks for input, Ctrl-C on
a running command. The session persists for the episode (a shell that exits is
replaced on the next call, and the agent is told).

One call sends ``keystrokes`` (text typed as is, a newline is Enter; a value that is
exactly a tmux key name, ``C-c``, ``Escape``, ``Up``, is that key), waits ``wait_s``
seconds and returns what is new: the lines from where the cursor was to the end of the
screen, or the whole screen while a full-screen program has it (or when the scroll-back
was cleared). The wait ends early once the shell is back at its prompt: the pane has
been quiet for 0.25 s and the shell is the program in the foreground. A last line says
which program is in the foreground.

The session is recorded as an asciinema v2 cast (:mod:`gem_eval.tools.cast`), which
:meth:`TerminalTool.attachments` hands to the run as the episode's ``terminal.cast``.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from gem_eval.errors import SandboxError
from gem_eval.sandbox.base import Sandbox
from gem_eval.tools import tmux_bundle
from gem_eval.tools.base import Tool, ToolResult
from gem_eval.tools.cast import CastRecorder
from gem_eval.tools.kit import SingleToolKit
from gem_eval.tools.tmux import HISTORY_LIMIT, SETTLE_S, PaneState, TmuxError, TmuxSession

POLL_S = 0.25
ENDED = "The terminal's shell exited and its session ended; the next call starts a new one."


class TerminalTool(Tool):
    """Type into a terminal in the sandbox and read it (see the module docstring).

    Args:
        width: The terminal's columns.
        height: The terminal's rows.
        wait_s: Seconds a call waits after sending its keys, unless it says otherwise.
        max_wait_s: The longest wait a call may ask for.
        output_limit: Bytes of terminal text returned per call (the middle is cut).
        record: Keep an asciinema cast of the session.
    """

    name = "terminal"
    needs_sandbox = True

    def __init__(
        self,
        width: int = 160,
        height: int = 40,
        wait_s: float = 1.0,
        max_wait_s: float = 60.0,
        output_limit: int = 10_000,
        record: bool = True,
    ) -> None:
        if not (20 <= width <= 1000 and 5 <= height <= 500):
            raise ValueError("width must be 20..1000 and height 5..500")
        if not 0 <= wait_s <= max_wait_s:
            raise ValueError("wait_s must be between 0 and max_wait_s")
        if output_limit < 200:
            raise ValueError("output_limit must be at least 200 bytes")
        self.width, self.height = width, height
        self.wait_s, self.max_wait_s = wait_s, max_wait_s
        self.output_limit, self.record = output_limit, record
        self.session: TmuxSession | None = None
        self.recorder: CastRecorder | None = None
        self.description = (
            f"Type into a terminal (a persistent shell in tmux, {width}x{height}) and read it "
            "back. Interactive and full-screen programs work (vi, less, a Python REPL). Text "
            "is typed as is: end a command with a newline to run it. A value that is exactly "
            "a tmux key name sends that key: C-c (interrupt), C-d, C-z, Escape, Enter, Tab, "
            "BSpace, Up, Down, Left, Right, PageUp, PageDown. Returns the new output, or the "
            "whole screen while a full-screen program runs."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "keystrokes": {
                    "type": "string",
                    "description": "Keys to send (may be empty: just wait and read).",
                },
                "wait_s": {
                    "type": "number",
                    "description": (
                        f"Seconds to wait before reading the terminal (default {wait_s:g}, "
                        f"at most {max_wait_s:g}). The wait ends early once a command has "
                        "finished and the shell is back at its prompt."
                    ),
                },
            },
            "required": ["keystrokes"],
            "additionalProperties": False,
        }

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        if sandbox is None:
            raise SandboxError("the terminal tool needs a sandbox and the episode has none")
        keystrokes: str = args["keystrokes"]
        wait = float(args.get("wait_s", self.wait_s))
        notes = []
        if not math.isfinite(wait):
            wait = self.wait_s
        elif not 0 <= wait <= self.max_wait_s:
            wait = min(max(wait, 0.0), self.max_wait_s)
            notes.append(f"(wait_s was limited to {wait:g} s)")
        session, restarted = await self._session(sandbox)
        if restarted:
            notes.append("(the previous session had ended: this is a new shell)")
        try:
            before = await session.state()
            sent = time.monotonic()
            if keystrokes:
                if self.recorder is not None:
                    self.recorder.input([keystrokes])
                await session.send_keys([keystrokes])
            early = await self._wait(session, wait, sent)
            waited = time.monotonic() - sent
            after = await session.state()
            text, whole = await self._read(session, before, after)
        except TmuxError:
            if session.alive:
                raise
            return ToolResult(output="\n".join([*notes, ENDED]), is_error=True)
        if after.alternate or whole:
            where = f"screen, cursor at line {after.cursor_y + 1}, column {after.cursor_x + 1}"
        else:
            where = "new output"
        if after.at_prompt:
            front = f"the shell ({session.shell}) is in the foreground"
        else:
            front = f"{after.command} in the foreground after {waited:.1f} s"
        body = _cap(text, self.output_limit) if text else "(nothing on the screen)"
        return ToolResult(
            output="\n".join([*notes, body, f"[{where}; {front}]"]),
            metadata={"foreground": after.command, "screen": whole, "at_prompt_early": early},
        )

    async def _session(self, sandbox: Sandbox) -> tuple[TmuxSession, bool]:
        """This episode's session, started (or replaced, when its shell exited)."""
        session = self.session
        if session is not None and session.sandbox is sandbox and session.alive:
            return session, False
        restarted = session is not None and session.sandbox is sandbox
        if session is not None:
            await session.close()
        await tmux_bundle.install(sandbox)  # first: the cast's clock starts with the session
        if self.record and self.recorder is None:
            self.recorder = CastRecorder(
                self.width, self.height, title="gem-eval terminal", env={"TERM": "screen"}
            )
        elif self.recorder is not None:
            self.recorder.marker("a new session")
        self.session = TmuxSession(
            sandbox,
            width=self.width,
            height=self.height,
            on_output=self.recorder.output if self.recorder is not None else None,
        )
        await self.session.start()
        return self.session, restarted

    @staticmethod
    async def _wait(session: TmuxSession, wait: float, sent: float) -> bool:
        """Wait ``wait`` seconds after ``sent``, or until the shell is back at its prompt
        (quiet for :data:`SETTLE_S` with the shell in the foreground): True then."""
        deadline = sent + wait
        while session.alive and (now := time.monotonic()) < deadline:
            quiet = now - max(session.last_output, sent)
            if quiet < SETTLE_S:
                await asyncio.sleep(min(SETTLE_S - quiet, deadline - now))
                continue
            if (await session.state()).at_prompt:
                return True
            await asyncio.sleep(min(POLL_S, deadline - now))
        return False

    @staticmethod
    async def _read(session: TmuxSession, before: PaneState, after: PaneState) -> tuple[str, bool]:
        """What is new since ``before``: the lines from its cursor line on (True: the
        whole screen instead, when full-screen programs or a cleared scroll-back make
        lines impossible to follow)."""
        grown = after.history - before.history
        if before.alternate or after.alternate or grown < 0 or after.history >= HISTORY_LIMIT:
            return await session.capture(), True
        return await session.capture(before.cursor_y - grown), False

    def attachments(self) -> dict[str, str]:
        """The session's cast (``terminal.cast``), once a session has started."""
        return {"terminal.cast": self.recorder.text()} if self.recorder is not None else {}

    async def aclose(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await session.close()


def _cap(text: str, limit: int) -> str:
    """``text`` within ``limit`` bytes: its head and tail, the middle cut with a note."""
    data = text.encode()
    if len(data) <= limit:
        return text
    half = limit // 2
    head = data[:half].decode(errors="ignore")
    tail = data[-half:].decode(errors="ignore")
    cut = len(data) - len(head.encode()) - len(tail.encode())
    return f"{head}\n[... {cut} bytes cut ...]\n{tail}"


class TerminalKit(SingleToolKit):
    """``tools: [terminal]`` or ``{name: terminal, width: 120, height: 30, wait_s: 2}``."""

    needs_sandbox = True
    tool_class = TerminalTool
