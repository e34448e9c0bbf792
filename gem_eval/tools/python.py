"""The ``python`` tool: a persistent Python interpreter in the episode's sandbox.

Variables, imports and functions survive between calls, as in a notebook. Each call's
printed output is returned, plus the value of a final expression (``x`` on the last
line shows ``x``). At the per-call timeout the running code gets a KeyboardInterrupt
and the interpreter keeps its state; an interpreter that crashes or will not stop is
restarted, and the agent is told its variables are gone.
"""

from __future__ import annotations

import json
from typing import Any

from gem_eval.sandbox.base import DEFAULT_OUTPUT_LIMIT, Sandbox
from gem_eval.tools.base import ToolResult
from gem_eval.tools.kit import SingleToolKit
from gem_eval.tools.session import Session, SessionTool

# Runs inside the sandbox: read one JSON request per line, run it, print the marker.
_DRIVER = r"""
import ast, json, os, sys, traceback
os.dup2(1, 2)  # one stream, so errors and output stay in order
marker = "__GEM_EVAL_" + sys.argv[1] + "__"
namespace = {"__name__": "__main__"}
def run(code):
    tree = ast.parse(code, "<agent>", "exec")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<agent>", "exec"), namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), "<agent>", "eval"), namespace)
        if value is not None:
            print(repr(value))
while True:
    try:
        line = sys.stdin.readline()
    except KeyboardInterrupt:  # a late interrupt, after the code had finished
        continue
    if not line:
        break
    status = "ok"
    try:
        run(json.loads(line)["code"])
    except KeyboardInterrupt:
        status = "interrupted"
    except BaseException as exc:
        status = "error"
        if isinstance(exc, SystemExit):
            print("SystemExit:", exc.code, file=sys.stderr)
        else:
            tb = traceback.extract_tb(exc.__traceback__)
            agent = [frame for frame in tb if frame.filename == "<agent>"]
            print("Traceback (most recent call last):", file=sys.stderr)
            print("".join(traceback.format_list(agent)), end="", file=sys.stderr)
            print("".join(traceback.format_exception_only(type(exc), exc)), end="",
                  file=sys.stderr)
    sys.stdout.flush(); sys.stderr.flush()
    print("\n" + marker, status, flush=True)
"""


class PythonSession(Session):
    """A Python interpreter answering one code cell per request."""

    def __init__(self, sandbox: Sandbox, python: str, output_limit: int) -> None:
        super().__init__(sandbox, output_limit)
        self.python = python

    def command(self) -> list[str]:
        return [self.python, "-u", "-c", _DRIVER, self.nonce]

    def encode(self, request: str) -> bytes:
        return (json.dumps({"code": request}) + "\n").encode()


class PythonTool(SessionTool):
    """Run Python code in a persistent interpreter in the sandbox.

    Args:
        timeout_s: Seconds a call may run before it is interrupted.
        python: The interpreter inside the sandbox.
        output_limit: Bytes of output returned per call.
    """

    name = "python"
    description = (
        "Run Python code in a persistent interpreter (variables and imports survive "
        "between calls). Returns what the code prints and the value of a final expression."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - read-only, an instance field in Tool
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Python code to run."}},
        "required": ["code"],
        "additionalProperties": False,
    }
    text_tag = "python"
    text_argument = "code"

    def __init__(
        self,
        timeout_s: float = 30.0,
        python: str = "python3",
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
    ) -> None:
        super().__init__(timeout_s, output_limit)
        self.python = python

    def make_session(self, sandbox: Sandbox) -> PythonSession:
        return PythonSession(sandbox, self.python, self.output_limit)

    async def call(self, args: dict[str, Any], sandbox: Sandbox | None = None) -> ToolResult:
        reply = await self.request(args["code"], sandbox)
        output = reply.output.strip("\n")
        notes = []
        if reply.timed_out:
            notes.append(f"TimeoutError: the code ran longer than {self.timeout_s:g} s")
        if reply.restarted:
            notes.append(
                "The Python interpreter "
                + ("did not stop" if reply.timed_out else "crashed")
                + " and was restarted: variables and imports from earlier calls are gone."
            )
        elif reply.status == "interrupted" and not reply.timed_out:
            notes.append("KeyboardInterrupt")
        text = "\n".join([output, *notes]).strip("\n") or "(no output)"
        failed = reply.timed_out or reply.restarted or reply.status != "ok"
        return ToolResult(output=text, is_error=failed, metadata={"status": reply.status})


class PythonKit(SingleToolKit):
    """``tools: [python]`` or ``{name: python, timeout_s: 10}``."""

    needs_sandbox = True
    tool_class = PythonTool
