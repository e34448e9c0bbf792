"""The terminal tool's parts without a container: tmux quoting and its control-mode
protocol (against a fake tmux), the asciinema cast, and TB1's ``solution.yaml``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gem_eval.envs.terminal.keystrokes import KeystrokeCommand, load_commands
from gem_eval.errors import TaskFormatError
from gem_eval.sandbox.base import ExecResult, Sandbox, SandboxProcess
from gem_eval.tools import tmux_bundle
from gem_eval.tools.cast import CastRecorder, key_bytes, read_cast
from gem_eval.tools.kit import build_kit
from gem_eval.tools.terminal import TerminalTool, _cap
from gem_eval.tools.tmux import TmuxError, TmuxSession, quote, unescape

# -- quoting -------------------------------------------------------------------------


def parse_double_quoted(word: str) -> str:
    """What tmux's parser makes of a double-quoted word (the escapes :func:`quote` uses)."""
    assert word[0] == word[-1] == '"'
    out, i, body = [], 0, word[1:-1]
    while i < len(body):
        if body[i] == "\\":
            if body[i + 1].isdigit():
                out.append(chr(int(body[i + 1 : i + 4], 8)))
                i += 4
                continue
            out.append(body[i + 1])
            i += 2
            continue
        assert body[i] not in '"$\n', f"unescaped {body[i]!r} in {word!r}"
        out.append(body[i])
        i += 1
    return "".join(out)


@pytest.mark.parametrize(
    "text", ["ls -la\n", 'say "hi" $HOME \\n', "tab\there\x1b:wq\r", "é ☃ {x} ; # ~", "-la"]
)
def test_quote_keeps_any_text_one_word_on_one_line(text: str) -> None:
    word = quote(text)
    assert "\n" not in word and "\r" not in word
    assert parse_double_quoted(word) == text


def test_unescape_reads_tmux_octal_escapes() -> None:
    assert unescape(b"a\\033[1mb\\134n\\015\\012") == b"a\x1b[1mb\\n\r\n"


# -- the control-mode protocol, against a fake tmux ----------------------------------


class FakeTmux(SandboxProcess):
    """Answers commands as ``tmux -C`` does: framed output blocks, and ``%output``
    lines (also in the middle of a block's lines, as tmux interleaves them)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.sent: list[str] = []
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.number = 100
        # The command line's own commands come first, flagged 0 (not this client's).
        self.emit("%begin 1 1 0", "%end 1 1 0", "%session-changed $0 gem-eval")
        self.emit("%output %0 \\033[?2004hme@box:/w$ ")

    def emit(self, *lines: str) -> None:
        self.queue.put_nowait(("\n".join(lines) + "\n").encode())

    async def write(self, data: bytes) -> None:
        for line in data.decode().splitlines():
            self.sent.append(line)
            if line == "kill-server":
                self.emit("%exit")
                self.queue.put_nowait(b"")
                continue
            self.number += 1
            guard = f"1796 {self.number} 1"
            verb = line.split()[0]
            if verb == "bad-command":
                self.emit(f"%begin {guard}", "unknown command: bad-command", f"%error {guard}")
                continue
            body = self.answers.get(verb, [])
            self.emit(f"%begin {guard}", *body, f"%end {guard}")

    async def read(self, n: int = 65536) -> bytes:
        return await self.queue.get()

    async def kill(self) -> None:
        self.queue.put_nowait(b"")

    async def interrupt(self) -> None:
        pass


class FakeProbe(SandboxProcess):
    """The foreground probe's shell: the pane's shell is always at its prompt."""

    def __init__(self) -> None:
        self.answers: asyncio.Queue[bytes] = asyncio.Queue()

    async def write(self, data: bytes) -> None:
        self.answers.put_nowait(b"-\n")

    async def read(self, n: int = 65536) -> bytes:
        return await self.answers.get()

    async def kill(self) -> None:
        pass

    async def interrupt(self) -> None:
        pass


class FakeBox(Sandbox):
    """A sandbox whose processes are a :class:`FakeTmux` and a :class:`FakeProbe`."""

    def __init__(self, tmux: FakeTmux) -> None:
        self.tmux = tmux
        self.spawned: list[list[str]] = []

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def exec(
        self,
        cmd: str | list[str],
        timeout: float | None = 60.0,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        raise AssertionError("the session must not exec")

    async def write_file(self, path: str, data: Any, **_: Any) -> None:
        raise AssertionError("the session must not write files")

    async def read_file(self, path: str) -> bytes:
        raise AssertionError("the session must not read files")

    async def spawn(self, cmd: list[str], **_: Any) -> SandboxProcess:
        self.spawned.append(cmd)
        return FakeProbe() if cmd[0] == "sh" else self.tmux


SCREEN = [
    "me@box:/w$ echo %end 1796 101 1",  # looks like a frame's end, but not this block's
    "%end 1796 101 1",
    "",
]


def test_the_session_speaks_tmux_control_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    async def nothing(box: Sandbox) -> None:
        pass

    monkeypatch.setattr(tmux_bundle, "in_container", lambda box: True)  # one PID namespace
    monkeypatch.setattr(tmux_bundle, "install", nothing)
    tmux = FakeTmux(
        {"display-message": ["12 3 4 0 77 vi"], "capture-pane": SCREEN, "send-keys": []}
    )
    seen: list[bytes] = []

    async def main() -> tuple[str, str]:
        session = TmuxSession(FakeBox(tmux), width=90, height=20, on_output=seen.append)
        await session.start()
        assert session.shell == "12 3 4 0 77 vi"  # the fake answers every display alike
        state = await session.state()
        assert (state.history, state.cursor_x, state.cursor_y, state.alternate) == (12, 3, 4, False)
        assert state.at_prompt  # the probe's answer, not tmux's (which said vi)
        await session.send_keys(["echo hi\n", "", "C-c"])
        with pytest.raises(TmuxError, match="unknown command"):
            await session.command("bad-command")
        screen = await session.capture(-3)
        await session.close()
        return screen, tmux.sent[-1]

    screen, last = asyncio.run(main())
    assert 'send-keys -t gem-eval -- "echo hi\\012" "C-c"' in tmux.sent  # "" dropped
    assert "capture-pane -p -t gem-eval -J -S -3 -E -" in tmux.sent
    assert screen == "me@box:/w$ echo %end 1796 101 1\n%end 1796 101 1"
    assert b"".join(seen) == b"\x1b[?2004hme@box:/w$ "
    assert last == "kill-server"


def test_the_session_is_started_with_its_size_and_no_config() -> None:
    tmux = FakeTmux({"display-message": ["sh"]})
    box = FakeBox(tmux)

    async def main() -> None:
        session = TmuxSession(box, width=90, height=20, cwd="/w")
        await session.start()
        await session.close()

    asyncio.run(main())
    (argv,) = box.spawned  # not a container: no probe
    assert argv[:6] == ["tmux", "-L", argv[2], "-f", "/dev/null", "-C"]
    assert argv[-6:] == ["-x", "90", "-y", "20", "-c", "/w"]
    assert argv[argv.index("history-limit") :][:2] == ["history-limit", "50000"]


def test_without_a_probe_tmux_names_the_foreground() -> None:
    tmux = FakeTmux({"display-message": ["1 0 0 1 77 less"]})

    async def main() -> None:
        session = TmuxSession(FakeBox(tmux))
        await session.start()
        state = await session.state()
        assert (state.command, state.at_prompt, state.alternate) == ("less", False, True)
        await session.close()

    asyncio.run(main())


def test_a_session_whose_tmux_exits_at_once_fails_to_start_with_its_words() -> None:
    class Broken(FakeTmux):
        def __init__(self) -> None:
            super().__init__({})
            self.queue = asyncio.Queue()
            self.emit("ld.so: cannot open shared object file")
            self.queue.put_nowait(b"")

    async def main() -> None:
        await TmuxSession(FakeBox(Broken())).start()

    with pytest.raises(Exception, match=r"tmux did not start: ld\.so: cannot open"):
        asyncio.run(main())


# -- the cast ---------------------------------------------------------------------------


def test_the_cast_is_asciicast_v2_with_output_input_and_markers() -> None:
    cast = CastRecorder(80, 24, title="t", env={"TERM": "screen"})
    cast.output("héllo ".encode()[:2])  # a character split across chunks stays whole
    cast.output("héllo ".encode()[2:] + b"\x1b[1mbold\r\n")
    cast.input(["ls\n", "C-c", "Escape", "Up"])
    cast.marker("a new session")
    header, events = read_cast(cast.text())
    assert header["version"] == 2 and (header["width"], header["height"]) == (80, 24)
    assert header["env"] == {"TERM": "screen"} and isinstance(header["timestamp"], int)
    assert "".join(d for _, c, d in events if c == "o") == "héllo \x1b[1mbold\r\n"
    assert [d for _, c, d in events if c == "i"] == ["ls\n\x03\x1b\x1b[A"]
    assert [d for _, c, d in events if c == "m"] == ["a new session"]


def test_a_cast_stops_at_its_limit_with_a_marker() -> None:
    cast = CastRecorder(80, 24, limit=10)
    cast.output(b"12345")
    cast.output(b"678901")
    cast.output(b"x")
    _, events = read_cast(cast.text())
    assert [(c, d) for _, c, d in events] == [("o", "12345"), ("m", events[1][2])]
    assert "cut" in events[1][2]


@pytest.mark.parametrize(
    "text",
    [
        '{"version": 1, "width": 80, "height": 24}\n',
        '{"version": 2, "width": 0, "height": 24}\n',
        '{"version": 2, "width": 80, "height": 24}\n[1.0, "o"]\n',
        '{"version": 2, "width": 80, "height": 24}\n[2.0, "o", "a"]\n[1.0, "o", "b"]\n',
    ],
)
def test_read_cast_refuses_what_is_not_a_v2_cast(text: str) -> None:
    with pytest.raises(ValueError):
        read_cast(text)


def test_key_bytes_are_what_a_terminal_sends() -> None:
    assert [key_bytes(k) for k in ["C-d", "^C", "Enter", "M-x", "F5", "plain"]] == [
        "\x04",
        "\x03",
        "\r",
        "\x1bx",
        None,
        "plain",
    ]


# -- the tool's settings and output ----------------------------------------------------


def test_the_kit_checks_settings_and_the_schema_states_the_defaults() -> None:
    kit = build_kit("terminal", {"width": 100, "height": 30, "wait_s": 2})
    assert kit.needs_sandbox
    tool = TerminalTool(wait_s=2, max_wait_s=30)
    wait = tool.parameters["properties"]["wait_s"]["description"]
    assert "default 2" in wait and "at most 30" in wait
    assert tool.parameters["required"] == ["keystrokes"]
    with pytest.raises(Exception, match="wait_s"):
        build_kit("terminal", {"wait_s": 100, "max_wait_s": 10})
    assert TerminalTool().attachments() == {}  # no session, no cast


def test_long_output_keeps_its_head_and_tail() -> None:
    text = "".join(f"line {n}\n" for n in range(5000))
    capped = _cap(text, 1000)
    assert capped.startswith("line 0\n") and capped.endswith("line 4999\n")
    assert "bytes cut" in capped and len(capped.encode()) < 1100


# -- TB1 solution.yaml ----------------------------------------------------------------


def test_solution_yaml_reads_terminal_bench_fields_and_defaults(tmp_path: Path) -> None:
    path = tmp_path / "solution.yaml"
    path.write_text(
        "- command: vim x\n  min_timeout_sec: 0.5\n"
        "- command: Escape\n  append_enter: false\n"
        "- command: make\n  block: true\n  max_timeout_sec: .inf\n  note: ignored\n"
    )
    vim, escape, make = load_commands(path)
    assert vim == KeystrokeCommand("vim x", min_timeout_sec=0.5)
    assert (vim.append_enter, vim.block, vim.max_timeout_sec) == (True, False, 180.0)
    assert escape.keys() == (["Escape"], False)
    assert make.max_timeout_sec == float("inf")
    assert make.keys() == (["make"], True)  # the Enter is taken off; a signal follows


def test_blocking_applies_only_when_the_last_key_runs_the_line() -> None:
    assert KeystrokeCommand("ls\n", block=True, append_enter=False).keys() == (["ls"], True)
    assert KeystrokeCommand("q", block=True, append_enter=False).keys() == (["q"], False)
    assert KeystrokeCommand("ls", block=False).keys() == (["ls", "Enter"], False)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("command: ls\n", 1, "list of commands"),
        ("- command: ls\n- {cmd: ls}\n", 2, "needs `command`"),
        ("- command: ls\n  block: yes please\n", 1, "block must be true or false"),
        ("- command: ls\n- command: x\n  min_timeout_sec: -1\n", 2, "min_timeout_sec"),
    ],
)
def test_a_bad_solution_yaml_names_the_file_and_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = tmp_path / "solution.yaml"
    path.write_text(text)
    with pytest.raises(TaskFormatError, match=words) as caught:
        load_commands(path)
    assert f"{path}:{line}" in str(caught.value)


def test_the_fixture_task_solution_parses() -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "terminal" / "tb1-repl-keystrokes"
    commands = load_commands(fixture / "solution.yaml")
    assert commands[0].command == "python3" and commands[-1].block
    assert json.dumps([c.command for c in commands])  # plain strings
