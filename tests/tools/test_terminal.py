"""The ``terminal`` tool in real containers: an agent (a scripted model) types into tmux
through the agent loop; full-screen programs, Ctrl-C, a REPL, the cast; and a TB1 task
whose reference solution is keystrokes (``solution.yaml``), played through tmux.

Each episode's tool outputs are read from its trajectory; what the keys did is read
from the container (the file vi wrote) or the pane itself.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gem_eval.agent import run_episode
from gem_eval.envs.terminal import keystrokes
from gem_eval.envs.terminal.keystrokes import KeystrokeCommand
from gem_eval.models import ModelOutput, ScriptedModel, tool_call
from gem_eval.models.reference import reference_model
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec, ToolSpec
from gem_eval.runner.executor import LocalExecutor
from gem_eval.runner.provision import Provisioner
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.tools.base import ToolResult
from gem_eval.tools.cast import read_cast
from gem_eval.tools.terminal import ENDED, TerminalTool
from gem_eval.trajectory import Trajectory
from tests.fakes import FakeEnv

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
KEYSTROKES_TASK = ROOT / "tests" / "fixtures" / "terminal" / "tb1-repl-keystrokes"
BASE = str(ROOT / "tasks" / "terminal" / "base")
# The base image has no editor or pager; a task image with them, as published ones have.
EDITOR_IMAGE = """\
FROM gem-eval/base:bookworm
RUN apt-get update \\
 && apt-get install -y --no-install-recommends vim-tiny less \\
 && rm -rf /var/lib/apt/lists/*
"""


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerSandbox]:
    from gem_eval.sandbox.images import build_image

    context = tmp_path_factory.mktemp("editor-image")
    (context / "Dockerfile").write_text(EDITOR_IMAGE)
    sandbox = DockerSandbox(build_image(context), run_id=f"test-{uuid.uuid4().hex[:8]}")
    try:
        asyncio.run(sandbox.start())
        yield sandbox
    finally:
        asyncio.run(sandbox.close())


def keys(text: str, wait_s: float | None = None) -> dict[str, Any]:
    return {"keystrokes": text} if wait_s is None else {"keystrokes": text, "wait_s": wait_s}


def play(box: DockerSandbox, tool: TerminalTool, *calls: dict[str, Any]) -> list[str]:
    """An episode where the model makes each call in turn, then answers; the outputs."""
    replies: list[Any] = [
        ModelOutput(tool_calls=[tool_call("terminal", args, id=f"call_{n}")])
        for n, args in enumerate(calls)
    ]

    async def episode() -> Trajectory:
        model = ScriptedModel([*replies, "\\boxed{done}"])
        try:
            return await run_episode(FakeEnv(length=1), model, [tool], sandbox=box, seed=0)
        finally:
            await tool.aclose()

    traj = asyncio.run(episode())
    assert traj.outcome == "completed", traj.error
    outputs = [e.output for s in traj.steps for e in s.tool_events]
    assert len(outputs) == len(calls)
    return outputs


def test_an_agent_edits_a_file_in_vi(box: DockerSandbox) -> None:
    out = play(
        box,
        TerminalTool(),
        keys("vi /workspace/note.txt\n", 3),
        keys("ihello from vi", 0.5),
        keys("Escape", 0.5),
        keys(":wq\n", 3),
    )
    assert "[screen, cursor at line 1, column 1; vi in the foreground" in out[0]
    assert out[1].startswith("hello from vi\n~\n") and "line 1, column 14;" in out[1]
    assert "line 1, column 13;" in out[2]  # Escape left insert mode: the cursor steps back
    assert out[3].endswith("the shell (bash) is in the foreground]")
    assert asyncio.run(box.read_file("/workspace/note.txt")) == b"hello from vi\n"


def test_ctrl_c_interrupts_a_running_command(box: DockerSandbox) -> None:
    out = play(
        box,
        TerminalTool(),
        keys("sleep 600\n", 1),
        keys("C-c"),
        keys("echo after-$((40 + 2))\n"),
    )
    assert out[0].endswith("sleep in the foreground after 1.0 s]")
    assert "^C" in out[1] and out[1].endswith("the shell (bash) is in the foreground]")
    assert "\nafter-42\n" in out[2]


def test_a_python_repl_keeps_its_state(box: DockerSandbox) -> None:
    out = play(
        box,
        TerminalTool(),
        keys("python3\n", 3),
        keys("x = 6 * 7\n", 0.5),
        keys("print(x + 1)\n", 0.5),
        keys("exit()\n"),
    )
    assert ">>>" in out[0] and "python3 in the foreground" in out[0]
    assert "\n43\n>>>" in out[2]
    assert "the shell (bash) is in the foreground" in out[3]


def test_less_pages_and_quits(box: DockerSandbox) -> None:
    out = play(
        box,
        TerminalTool(width=80, height=12),
        keys("seq 1 500 | less\n", 2),
        keys("G", 1),
        keys("q"),
    )
    assert out[0].startswith("1\n2\n3\n") and "less in the foreground" in out[0]
    assert "500" in out[1] and "\n1\n" not in out[1]  # the last page, the whole screen
    assert out[2].endswith("the shell (bash) is in the foreground]")


def test_text_is_typed_exactly_and_the_size_is_the_settings(box: DockerSandbox) -> None:
    nasty = "-n \"double\" 'single' $HOME \\back\\slash {brace}; # é ☃ ~ %% ^"
    out = play(
        box,
        TerminalTool(width=100, height=30),
        keys("stty size; cat > /workspace/typed.txt\n"),
        keys(nasty + "\n", 0.5),
        keys("C-d"),
    )
    assert "\n30 100\n" in out[0]
    typed = asyncio.run(box.read_file("/workspace/typed.txt")).decode()
    assert typed == nasty + "\n"


def test_a_wait_ends_when_the_prompt_is_back_and_not_while_a_program_runs(
    box: DockerSandbox,
) -> None:
    tool = TerminalTool(max_wait_s=60)

    async def calls() -> list[ToolResult]:
        try:
            return [
                await tool.call(keys("echo quick\n", 60), box),
                await tool.call(keys("sleep 2 | cat\n", 1), box),  # a pipeline in front
                await tool.call(keys("", 60), box),  # its end is waited for
            ]
        finally:
            await tool.aclose()

    quick, slow, rest = asyncio.run(calls())
    assert quick.metadata["at_prompt_early"] and "\nquick\n" in quick.output
    assert not slow.metadata["at_prompt_early"] and slow.metadata["foreground"] == "sleep, cat"
    assert rest.metadata["at_prompt_early"]


def test_a_shell_that_exits_is_replaced_and_the_agent_told(box: DockerSandbox) -> None:
    tool = TerminalTool()
    out = play(box, tool, keys("export MARK=1; exit\n"), keys("echo mark=$MARK\n"))
    assert ENDED in out[0]
    assert out[1].startswith("(the previous session had ended") and "\nmark=\n" in out[1]
    _, events = read_cast(tool.attachments()["terminal.cast"])
    assert [d for _, c, d in events if c == "m"] == ["a new session"]


def test_the_session_is_recorded_as_an_asciicast_v2(box: DockerSandbox) -> None:
    tool = TerminalTool(width=90, height=25)
    play(box, tool, keys("echo recorded-$((2 * 21))\n"), keys("printf '\\033[1mbold\\033[0m\\n'\n"))
    header, events = read_cast(tool.attachments()["terminal.cast"])
    assert (header["version"], header["width"], header["height"]) == (2, 90, 25)
    printed = "".join(d for _, c, d in events if c == "o")
    assert "recorded-42\r\n" in printed and "\x1b[1mbold\x1b[0m" in printed
    assert [d for _, c, d in events if c == "i"] == [
        "echo recorded-$((2 * 21))\n",
        "printf '\\033[1mbold\\033[0m\\n'\n",
    ]
    assert events[-1][0] > events[0][0] >= 0


# -- TB1 keystroke solutions, played into tmux ------------------------------------------


def test_a_blocking_command_is_waited_for_and_one_that_never_ends_times_out(
    box: DockerSandbox,
) -> None:
    waited = KeystrokeCommand("sleep 1; echo waited > /workspace/block.txt", block=True)
    said = asyncio.run(keystrokes.play(box, [waited]))
    assert said.startswith("[solution.yaml: all 1 commands sent]")
    # Read at once: the session (and its shell) ended with play, so only a wait for the
    # command let it write the file.
    assert asyncio.run(box.read_file("/workspace/block.txt")) == b"waited\n"
    endless = KeystrokeCommand("sleep 600", block=True, max_timeout_sec=1)
    after = KeystrokeCommand("echo never > /workspace/never.txt", block=True)
    said = asyncio.run(keystrokes.play(box, [endless, after]))
    assert said.startswith("[solution.yaml: command 1 ('sleep 600') timed out after 1 s]")
    with pytest.raises(FileNotFoundError):
        asyncio.run(box.read_file("/workspace/never.txt"))


# -- through the runner: a suite's `tools: [terminal]`, and a keystroke oracle ----------


def run(task: Path, model: Any, tools: list[ToolSpec] | None = None) -> EpisodeRecord:
    """One episode of a terminal task through the executor (as ``gem-eval run`` plays it)."""
    run_id = f"test-terminal-tool-{uuid.uuid4().hex[:8]}"
    kwargs = {"path": str(task), "image_map": {"ghcr.io/laude-institute/t-bench/*": BASE}}
    spec = EpisodeSpec(
        key="k",
        task=TaskSpec(
            id=task.name, env_id="terminal:Task-v0", env_kwargs=kwargs, tools=tools or []
        ),
        model=ModelSpec(name=model.name),
        sample=0,
        epoch=0,
        seed=0,
    )

    async def main() -> EpisodeRecord:
        executor = LocalExecutor(lambda _: model, Provisioner(run_id))
        await executor.start([spec.model])
        try:
            return await executor.run(run_id, spec)
        finally:
            await executor.aclose()

    return asyncio.run(main())


def test_a_keystroke_solution_passes_through_tmux_and_doing_nothing_fails() -> None:
    oracle = run(KEYSTROKES_TASK, reference_model("oracle"))
    assert oracle.outcome == "completed" and oracle.score == 1.0, oracle.trajectory
    assert oracle.trajectory is not None
    said = oracle.trajectory.steps[0].action or ""
    assert "[solution.yaml: all 7 commands sent]" in said and ">>> " in said
    noop = run(KEYSTROKES_TASK, reference_model("noop"))
    assert noop.outcome == "completed" and noop.score == 0.0


def test_a_suite_offers_the_terminal_beside_bash_and_keeps_the_cast() -> None:
    def type_in(text: str, wait_s: float | None = None) -> ModelOutput:
        return ModelOutput(tool_calls=[tool_call("terminal", keys(text, wait_s))])

    calls: list[str | ModelOutput] = [
        type_in("python3\n", 3),
        type_in("a, b = 0, 1\n", 0.3),
        type_in("for _ in range(20): a, b = b, a + b\n"),
        type_in("\n", 0.3),
        type_in("open('fib.txt', 'w').write(str(a))\n"),
        ModelOutput(tool_calls=[tool_call("bash", {"command": "cat /app/fib.txt"})]),
        "Done.",
    ]
    record = run(KEYSTROKES_TASK, ScriptedModel(calls), tools=[ToolSpec(name="terminal")])
    assert record.outcome == "completed" and record.score == 1.0
    assert record.trajectory is not None
    events = [e for s in record.trajectory.steps for e in s.tool_events]
    assert [e.name for e in events] == ["terminal"] * 5 + ["bash"]
    assert events[-1].output.startswith("6765")
    files = record.take_files()  # what the run's directory writes beside the record
    assert sorted(files) == ["bash.cast", "terminal.cast"]  # each tool keeps its session
    assert "$ cat /app/fib.txt" in files["bash.cast"]
    _, cast = read_cast(files["terminal.cast"])
    printed = "".join(d for _, c, d in cast if c == "o")
    assert ">>> open('fib.txt', 'w').write(str(a))\r\n4\r\n" in printed  # 4 characters
