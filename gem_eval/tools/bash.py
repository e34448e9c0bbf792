"""The ``bash`` tool: a persistent shell session in the episode's sandbox.

``cd`` and exported variables persist between calls, as in a terminal. Each command's
output (stdout and stderr together) and exit code are returned. Commands read no
input (stdin is ``/dev/null``), so an interactive program cannot hang the session on a
prompt. At the per-call timeout the command gets SIGINT and the shell survives (it traps
SIGINT); a shell that dies or will not stop is restarted in the last known directory,
and the agent is told that variables are gone. The commands and what they printed are
kept as an asciinema v2 recording, the episode's ``bash.cast`` attachment (``record``).
"""

from __future__ import annotations

import shlex
from typing import Any

from gem_eval.sandbox.base import DEFAULT_OUTPUT_LIMIT, Sandbox
from gem_eval.tools.base import ToolResult
from gem_eval.tools.cast import CastRecorder
from gem_eval.tools.kit import SingleToolKit
from gem_eval.tools.session import Session, SessionTool

CAST_WIDTH, CAST_HEIGHT = 120, 40
"""The terminal size a bash tool's recording declares (its output is not laid out on a
screen; a player wraps long lines)."""


def ansi_c_quote(text: str) -> str:
    """``text`` as a bash ``$'...'`` string (any bytes, quotes and newlines survive)."""
    out = []
    for ch in text:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch.isprintable() or ord(ch) > 127:
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}")
    return "$'" + "".join(out) + "'"


class BashSession(Session):
    """A bash process answering one command per request."""

    def __init__(self, sandbox: Sandbox, output_limit: int, cwd: str | None) -> None:
        super().__init__(sandbox, output_limit)
        self.cwd = cwd

    def command(self) -> list[str]:
        return ["bash", "--noprofile", "--norc"]

    def encode(self, request: str) -> bytes:
        marker = self.marker.decode()
        return (
            f"eval {ansi_c_quote(request)} </dev/null 2>&1\n"
            f'printf \'\\n{marker} %s %s\\n\' "$?" "$PWD"\n'
        ).encode()

    async def on_start(self) -> None:
        # A SIGINT trap keeps the shell alive when a command is interrupted; the first
        # request then restores the directory of the session this one replaces.
        setup = "trap ':' INT; exec 2>&1"
        if self.cwd:
            setup += f"; cd {shlex.quote(self.cwd)} 2>/dev/null"
        assert self.process is not None
        await self.process.write((setup + "\n").encode())


class BashTool(SessionTool):
    """Run shell commands in a persistent bash session in the sandbox.

    Args:
        timeout_s: Seconds a command may run before it is interrupted.
        output_limit: Bytes of output returned per call.
    """

    name = "bash"
    description = (
        "Run a bash command in a persistent shell (the working directory and exported "
        "variables persist between calls). Returns the output and the exit code."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - read-only, an instance field in Tool
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command to run."}},
        "required": ["command"],
        "additionalProperties": False,
    }
    text_tag = "bash"
    text_argument = "command"

    def __init__(
        self,
        timeout_s: float = 60.0,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        record: bool = True,
    ) -> None:
        super().__init__(timeout_s, output_limit)
        self.record = record
        self._cast: CastRecorder | None = None

    def make_session(self, sandbox: Sandbox) -> BashSession:
        return BashSession(sandbox, self.output_limit, None)

    def attachments(self) -> dict[str, str]:
        """``bash.cast``: the commands and what they printed, as an asciinema v2
        recording (replay with ``asciinema play``), when any command ran."""
        return {"bash.cast": self._cast.text()} if self._cast is not None else {}

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        result = await self._run(args["command"], sandbox)
        if self.record:
            if self._cast is None:
                self._cast = CastRecorder(CAST_WIDTH, CAST_HEIGHT, title="bash tool")
            self._cast.output(_crlf(f"$ {args['command']}\n").encode())
            self._cast.output(_crlf(result.output + "\n").encode())
        return result

    async def _run(self, command: str, sandbox: Sandbox | None) -> ToolResult:
        reply = await self.request(command, sandbox)
        session = self.session
        assert isinstance(session, BashSession)
        output = reply.output.strip("\n")
        exit_code: int | None = None
        if reply.status is not None:
            code, _, cwd = reply.status.partition(" ")
            exit_code = int(code) if code.lstrip("-").isdigit() else None
            session.cwd = cwd or session.cwd
        notes = []
        if reply.timed_out:
            notes.append(f"The command timed out after {self.timeout_s:g} s and was interrupted.")
        if reply.restarted:
            notes.append(
                "The shell "
                + ("did not stop" if reply.timed_out else "exited")
                + f" and was restarted in {session.cwd or 'its start directory'}: "
                "variables set earlier are gone."
            )
        if exit_code is not None and not reply.timed_out:
            notes.append(f"[exit code {exit_code}]")
        text = "\n".join([output, *notes]).strip("\n")
        failed = reply.timed_out or reply.restarted or exit_code != 0
        return ToolResult(output=text, is_error=failed, metadata={"exit_code": exit_code})


def _crlf(text: str) -> str:
    """Line ends as a terminal prints them (a cast player needs the carriage return)."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


class BashKit(SingleToolKit):
    """``tools: [bash]`` or ``{name: bash, timeout_s: 120}``."""

    needs_sandbox = True
    tool_class = BashTool
