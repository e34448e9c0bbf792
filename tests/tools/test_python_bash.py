"""The ``python`` and ``bash`` tools, driven through the agent loop by a scripted model,
in a bubblewrap sandbox and in a container.

Each test plays one episode: the model makes its tool calls one per turn, then answers
(the fake env ends the episode on the first answer). What the model saw is read from the
trajectory's tool events.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gem_eval.agent import run_episode
from gem_eval.models import ModelOutput, ScriptedModel, tool_call
from gem_eval.sandbox import Sandbox
from gem_eval.tools import Tool
from gem_eval.tools.bash import BashTool
from gem_eval.tools.python import PythonTool
from gem_eval.trajectory import Trajectory
from tests.fakes import FakeEnv

TIMEOUT_S = 1.0
GRACE_S = 3.0  # the session's interrupt grace; a timed-out call must end well within


@pytest.fixture(
    params=[
        pytest.param("local", marks=pytest.mark.bwrap),
        pytest.param("docker", marks=pytest.mark.docker),
    ]
)
def box(request: pytest.FixtureRequest) -> Sandbox:
    sandbox: Sandbox = request.getfixturevalue(f"{request.param}_box")
    return sandbox


def play(box: Sandbox, tool: Tool, *arguments: dict[str, Any]) -> Trajectory:
    """An episode where the model calls ``tool`` once per turn with each of
    ``arguments``, then answers."""
    replies: list[Any] = [
        ModelOutput(tool_calls=[tool_call(tool.name, args, id=f"call_{n}")])
        for n, args in enumerate(arguments)
    ]

    async def episode() -> Trajectory:
        model = ScriptedModel([*replies, "\\boxed{done}"])
        try:
            return await run_episode(FakeEnv(length=1), model, [tool], sandbox=box, seed=0)
        finally:
            await tool.aclose()

    traj = asyncio.run(episode())
    assert traj.outcome == "completed", traj.error
    assert sum(len(s.tool_events) for s in traj.steps) == len(arguments)
    return traj


def outputs(traj: Trajectory) -> list[str]:
    return [e.output for s in traj.steps for e in s.tool_events]


def errors(traj: Trajectory) -> list[bool]:
    return [e.is_error for s in traj.steps for e in s.tool_events]


def code(*cells: str) -> list[dict[str, Any]]:
    return [{"code": cell} for cell in cells]


def commands(*lines: str) -> list[dict[str, Any]]:
    return [{"command": line} for line in lines]


# -- python ---------------------------------------------------------------------------


def test_python_state_persists_between_calls(box: Sandbox) -> None:
    traj = play(
        box,
        PythonTool(),
        *code(
            "x = 41",
            "x + 1",
            "import json\ndef double(v):\n    return 2 * v",
            "json.dumps(double(x))",
        ),
    )
    assert outputs(traj) == ["(no output)", "42", "(no output)", "'82'"]
    assert errors(traj) == [False] * 4
    # The model saw each result as a tool message answering its call.
    tool_messages = [m for m in traj.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0", "call_1", "call_2", "call_3"]
    assert tool_messages[1]["content"] == "42"


def test_python_timeout_interrupts_but_keeps_state(box: Sandbox) -> None:
    traj = play(
        box,
        PythonTool(timeout_s=TIMEOUT_S),
        *code("x = 41", "while True:\n    pass", "x + 1"),
    )
    _, spun, after = traj.steps[0:3]
    assert spun.tool_events[0].output == "TimeoutError: the code ran longer than 1 s"
    assert spun.tool_events[0].is_error
    assert TIMEOUT_S <= spun.tool_events[0].latency_s < TIMEOUT_S + GRACE_S
    assert after.tool_events[0].output == "42"  # same interpreter, state kept


def test_python_crash_restarts_the_interpreter_and_says_so(box: Sandbox) -> None:
    traj = play(
        box,
        PythonTool(),
        *code("x = 41", "import os\nprint('bye', flush=True)\nos._exit(3)", "x", "1 + 1"),
    )
    crashed, lost, fresh = outputs(traj)[1:]
    assert crashed == (
        "bye\nThe Python interpreter crashed and was restarted: "
        "variables and imports from earlier calls are gone."
    )
    assert "NameError: name 'x' is not defined" in lost
    assert fresh == "2"
    assert errors(traj) == [False, True, True, False]


def test_python_traceback_is_shown_without_the_driver(box: Sandbox) -> None:
    traj = play(
        box,
        PythonTool(),
        *code("def f(v):\n    return 1 / v\n\nprint('before')\nf(0)", "f(2)"),
    )
    shown, after = outputs(traj)
    assert shown == (
        "before\n"
        "Traceback (most recent call last):\n"
        '  File "<agent>", line 5, in <module>\n'
        '  File "<agent>", line 2, in f\n'
        "ZeroDivisionError: division by zero"
    )
    assert after == "0.5"  # an exception does not cost the session
    assert errors(traj) == [True, False]


def test_python_in_text_mode(box: Sandbox) -> None:
    model = ScriptedModel(["<python>x = 41</python>", "Now <python>x + 1</python>", "\\boxed{42}"])
    tool = PythonTool()

    async def episode() -> Trajectory:
        try:
            return await run_episode(
                FakeEnv(length=1), model, [tool], sandbox=box, seed=0, tool_mode="text"
            )
        finally:
            await tool.aclose()

    traj = asyncio.run(episode())
    assert traj.outcome == "completed"
    responses = [m["content"] for m in traj.messages if m["role"] == "user"][1:]
    assert responses == [
        '<tool_response name="python">\n(no output)\n</tool_response>',
        '<tool_response name="python">\n42\n</tool_response>',
    ]


# -- bash -----------------------------------------------------------------------------


def test_bash_cd_and_exports_persist(box: Sandbox) -> None:
    traj = play(
        box,
        BashTool(),
        *commands(
            "mkdir -p a/b && cd a/b", "export GREETING='hello there'", 'pwd; echo "$GREETING"'
        ),
    )
    assert outputs(traj) == [
        "[exit code 0]",
        "[exit code 0]",
        f"{box.workdir}/a/b\nhello there\n[exit code 0]",
    ]


def test_bash_exit_codes_and_errors_are_shown(box: Sandbox) -> None:
    traj = play(box, BashTool(), *commands("(exit 3)", "ls /no/such/dir", "echo fine"))
    status, missing, fine = outputs(traj)
    assert status == "[exit code 3]"
    assert "No such file or directory" in missing and missing.endswith("[exit code 2]")
    assert fine == "fine\n[exit code 0]"
    assert errors(traj) == [True, True, False]


def test_bash_keeps_an_asciinema_recording_of_its_commands(box: Sandbox) -> None:
    from gem_eval.tools.cast import read_cast

    tool = BashTool()
    assert tool.attachments() == {}  # nothing ran: no file
    traj = play(box, tool, *commands("echo one; echo two", "(exit 4)"))
    assert outputs(traj)[0] == "one\ntwo\n[exit code 0]"
    header, events = read_cast(tool.attachments()["bash.cast"])
    assert header["version"] == 2 and header["width"] > 0 and header["height"] > 0
    printed = "".join(text for _, code, text in events if code == "o")
    assert printed == (
        "$ echo one; echo two\r\none\r\ntwo\r\n[exit code 0]\r\n$ (exit 4)\r\n[exit code 4]\r\n"
    )
    times = [t for t, _, _ in events]
    assert times == sorted(times)
    quiet = BashTool(record=False)
    play(box, quiet, *commands("echo x"))
    assert quiet.attachments() == {}


def test_bash_timeout_interrupts_and_the_shell_survives(box: Sandbox) -> None:
    traj = play(
        box,
        BashTool(timeout_s=TIMEOUT_S),
        *commands("cd /tmp && export KEPT=yes", "sleep 300", 'echo "$KEPT"; pwd'),
    )
    _, slept, after = (s.tool_events[0] for s in traj.steps[:3])
    assert slept.output == "The command timed out after 1 s and was interrupted."
    assert slept.is_error
    assert TIMEOUT_S <= slept.latency_s < TIMEOUT_S + GRACE_S
    assert after.output == "yes\n/tmp\n[exit code 0]"  # the same shell


def test_bash_exit_restarts_in_the_last_directory(box: Sandbox) -> None:
    traj = play(
        box,
        BashTool(),
        *commands(
            "mkdir -p here && cd here && export GONE=1", "exit 4", 'pwd; echo "${GONE:-unset}"'
        ),
    )
    exited, after = outputs(traj)[1:]
    assert exited == (
        f"The shell exited and was restarted in {box.workdir}/here: variables set earlier are gone."
    )
    assert after == f"{box.workdir}/here\nunset\n[exit code 0]"
