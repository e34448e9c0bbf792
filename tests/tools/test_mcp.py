"""The ``mcp`` tool kit against a real MCP server (tests/fixtures/mcp_server.py, written
with the official SDK): over stdio on the host, over streamable HTTP, and over stdio
inside a sandbox; tool naming, result rendering, the kit's settings, and an agent
episode calling a server's tool.

Starting a stdio server costs ~1.5 s, so tests that only call tools share one server
(``notes``), kept on one event loop in a background thread for the whole module.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gem_eval.agent import run_episode
from gem_eval.errors import GemEvalError, SandboxError, UserError
from gem_eval.models import ModelOutput, ScriptedModel, tool_call
from gem_eval.sandbox.base import ExecResult, Sandbox, SandboxProcess
from gem_eval.tools.base import Tool
from gem_eval.tools.kit import build_kit
from gem_eval.tools.mcp import MCPConnection, MCPKit, MCPTool, ServerConfig, render
from tests.fakes import FakeEnv

SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_server.py"
T = TypeVar("T")


def stdio(name: str = "notes", **extra: Any) -> dict[str, Any]:
    """A server entry that runs the fixture server over stdio."""
    return {"name": name, "command": sys.executable, "args": [str(SERVER), "--name", name]} | extra


def by_name(tools: list[Tool]) -> dict[str, MCPTool]:
    return {t.name: t for t in tools if isinstance(t, MCPTool)}


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def server_pid(tool: MCPTool) -> int:
    """The pid of the server behind ``tool`` (asked through its ``pid`` tool)."""
    pid_tool = MCPTool(tool.connection, _spec(tool.connection, "pid"), "pid", 5)
    return int((await pid_tool.call({})).output)


def _spec(connection: MCPConnection, name: str) -> Any:
    return next(t for t in connection.tools if t.name == name)


class BackgroundLoop:
    """One event loop in a thread: a server opened in it outlives any single test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def loop() -> Iterator[BackgroundLoop]:
    background = BackgroundLoop()
    yield background
    background.stop()


@pytest.fixture(scope="module")
def notes(loop: BackgroundLoop) -> Iterator[tuple[MCPKit, dict[str, MCPTool]]]:
    """One stdio server for the module, with a 2 s call timeout."""
    kit = MCPKit(servers=[stdio()], timeout_s=2)
    tools = loop.run(kit.open(None))
    yield kit, by_name(tools)
    loop.run(kit.aclose())


# -- stdio -------------------------------------------------------------------------------


def test_tools_are_listed_with_the_servers_schemas(
    notes: tuple[MCPKit, dict[str, MCPTool]],
) -> None:
    kit, tools = notes
    assert set(tools) == {
        "add",
        "notes_write",
        "notes_read",
        "fail",
        "slow",
        "pid",
        "log",
        "picture",
    }
    add = tools["add"].schema()["function"]
    assert add["name"] == "add" and add["description"] == "Add two integers."
    assert add["parameters"]["type"] == "object"
    assert add["parameters"]["required"] == ["a", "b"]
    assert {k: v["type"] for k, v in add["parameters"]["properties"].items()} == {
        "a": "integer",
        "b": "integer",
    }
    assert kit.describe() == {
        "servers": [
            {
                "name": "notes",
                "transport": "stdio",
                "server": {"name": "notes", "version": "1.2.3"},
                "tools": [
                    "add",
                    "notes_write",
                    "notes_read",
                    "fail",
                    "slow",
                    "pid",
                    "log",
                    "picture",
                ],
            }
        ],
        "shared": False,
    }


def test_a_call_goes_end_to_end(
    loop: BackgroundLoop, notes: tuple[MCPKit, dict[str, MCPTool]]
) -> None:
    result = loop.run(notes[1]["add"].call({"a": 2, "b": 3}))
    assert (result.output, result.is_error) == ("5", False)
    assert result.metadata == {"server": "notes", "tool": "add"}


def test_server_state_persists_across_calls(
    loop: BackgroundLoop, notes: tuple[MCPKit, dict[str, MCPTool]]
) -> None:
    tools = notes[1]
    loop.run(tools["notes_write"].call({"key": "k", "value": "remember me"}))
    assert loop.run(tools["notes_read"].call({"key": "k"})).output == "remember me"


def test_a_failing_tool_is_an_error_result(
    loop: BackgroundLoop, notes: tuple[MCPKit, dict[str, MCPTool]]
) -> None:
    result = loop.run(notes[1]["fail"].call({}))
    assert result.is_error
    assert result.output.startswith("Error") and "this tool always fails" in result.output


def test_a_slow_call_times_out_and_the_server_still_answers(
    loop: BackgroundLoop, notes: tuple[MCPKit, dict[str, MCPTool]]
) -> None:
    tools = notes[1]
    began = time.monotonic()
    result = loop.run(tools["slow"].call({"seconds": 30}))
    assert time.monotonic() - began < 4
    assert result.is_error and result.output == "Error: slow did not finish within 2 s"
    assert result.metadata["timeout"] is True
    assert loop.run(tools["add"].call({"a": 1, "b": 1})).output == "2"
    assert loop.run(tools["slow"].call({"seconds": 0.01})).output == "slept 0.01"


def test_non_text_content_is_summarised(
    loop: BackgroundLoop, notes: tuple[MCPKit, dict[str, MCPTool]]
) -> None:
    assert loop.run(notes[1]["picture"].call({})).output == "a picture:\n[image: image/png]"


def test_long_output_is_cut_at_the_output_limit(
    loop: BackgroundLoop, notes: tuple[MCPKit, dict[str, MCPTool]]
) -> None:
    tools = notes[1]
    loop.run(tools["notes_write"].call({"key": "long", "value": "x" * 100}))
    connection = tools["notes_read"].connection
    small = MCPTool(connection, _spec(connection, "notes_read"), "notes_read", 5, output_limit=10)
    output = loop.run(small.call({"key": "long"})).output
    assert output.startswith("x" * 10 + "\n[... 90 bytes cut")


def test_render_summarises_every_kind_of_content() -> None:
    from mcp.types import (
        AudioContent,
        BlobResourceContents,
        CallToolResult,
        EmbeddedResource,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    result = CallToolResult(
        content=[
            TextContent(text="hello"),
            AudioContent(data="AA==", mime_type="audio/wav"),
            ResourceLink(name="f", uri="file:///f.txt", mime_type="text/plain"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.md", text="# A")),
            EmbeddedResource(
                resource=BlobResourceContents(uri="file:///b", blob="AA==", mime_type="x/y")
            ),
        ]
    )
    assert render(result) == (
        "hello\n[audio: audio/wav]\n[resource link: file:///f.txt (text/plain)]\n"
        "[resource: file:///a.md]\n# A\n[resource: file:///b (x/y)]"
    )
    structured = CallToolResult(content=[], structured_content={"n": 1, "s": "é"})
    assert render(structured) == '{"n": 1, "s": "é"}'
    assert render(CallToolResult(content=[])) == ""


def test_episodes_get_their_own_servers_which_release_stops() -> None:
    async def scenario() -> None:
        kit = MCPKit(servers=[stdio()])
        await kit.aclose()  # closing before opening, and releasing nothing, are fine
        await kit.release([])
        first, second = await asyncio.gather(kit.open(None), kit.open(None))
        a, b = by_name(first), by_name(second)
        pids = [await server_pid(a["add"]), await server_pid(b["add"])]
        assert pids[0] != pids[1]
        await a["notes_write"].call({"key": "k", "value": "mine"})
        assert (await b["notes_read"].call({"key": "k"})).output == "(no such note)"
        await kit.release(first)
        await kit.release(first)  # twice is harmless
        assert gone(pids[0]) and not gone(pids[1])
        after = await a["add"].call({"a": 1, "b": 1})
        assert after.is_error and after.output == "Error: MCP server 'notes' was closed"
        await kit.aclose()  # the run ends: the episode's server left over is stopped too
        assert gone(pids[1])

    asyncio.run(scenario())


def test_a_shared_server_serves_every_episode_until_the_run_ends() -> None:
    async def scenario() -> None:
        kit = MCPKit(servers=[stdio()], shared=True)
        first, second = await asyncio.gather(kit.open(None), kit.open(None))
        a, b = by_name(first), by_name(second)
        pid = await server_pid(a["add"])
        assert await server_pid(b["add"]) == pid
        await a["notes_write"].call({"key": "k", "value": "shared"})
        await kit.release(first)
        assert (await b["notes_read"].call({"key": "k"})).output == "shared"
        # A shared server that died is started again for the next episode.
        os.kill(pid, signal.SIGKILL)
        third = by_name(await kit.open(None))
        new_pid = await server_pid(third["add"])
        assert new_pid != pid and (await third["add"].call({"a": 1, "b": 1})).output == "2"
        assert (await b["add"].call({"a": 1, "b": 1})).is_error  # the old server stays dead
        await kit.aclose()
        assert gone(new_pid)

    asyncio.run(scenario())


def test_a_server_that_dies_mid_episode_gives_error_results() -> None:
    async def scenario() -> None:
        kit = MCPKit(servers=[stdio()])
        tools = by_name(await kit.open(None))
        os.kill(await server_pid(tools["add"]), signal.SIGKILL)
        result = await tools["add"].call({"a": 1, "b": 1})
        assert result.is_error and result.output.startswith("Error: MCP server 'notes' exited")
        await kit.aclose()

    asyncio.run(scenario())


def test_startup_failures_name_the_server_and_say_why(tmp_path: Path) -> None:
    def start(server: dict[str, Any]) -> str:
        with pytest.raises(GemEvalError) as info:
            asyncio.run(MCPKit(servers=[server]).open(None))
        return str(info.value)

    missing = start({"name": "x", "command": "no-such-mcp-server"})
    assert (
        missing
        == "MCP server 'x' could not be started ('no-such-mcp-server': No such file or directory)"
    )
    crash = "import sys; print('config file missing', file=sys.stderr); sys.exit(3)"
    crashed = start({"name": "x", "command": sys.executable, "args": ["-c", crash]})
    assert crashed == "MCP server 'x' exited during startup; its last output:\nconfig file missing"
    # A server that never answers is given up on at connect_timeout_s, and killed.
    pid_file = tmp_path / "pid"
    mute = {"name": "x", "command": "sh", "args": ["-c", f"echo $$ > {pid_file}; exec sleep 60"]}
    began = time.monotonic()
    assert start(mute | {"connect_timeout_s": 0.5}) == (
        "MCP server 'x' did not answer within 0.5 s of starting"
    )
    assert time.monotonic() - began < 5
    assert gone(int(pid_file.read_text()))


# -- streamable HTTP ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The fixture server over streamable HTTP, on a free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", "--port", str(port), "--name", "web"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def test_streamable_http_server(http_url: str) -> None:
    async def scenario() -> None:
        kit = MCPKit(servers=[{"name": "web", "url": http_url, "headers": {"X-Test": "1"}}])
        tools = by_name(await kit.open(None))
        assert (await tools["add"].call({"a": 20, "b": 22})).output == "42"
        await tools["notes_write"].call({"key": "k", "value": "over http"})
        assert (await tools["notes_read"].call({"key": "k"})).output == "over http"
        described = kit.describe()["servers"][0]
        assert (described["transport"], described["server"]["name"]) == ("http", "web")
        await kit.release(list(tools.values()))

    asyncio.run(scenario())


def test_an_unreachable_http_server_is_a_clear_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    with pytest.raises(GemEvalError, match=rf"^MCP server 'web' could not be reached at {url} "):
        asyncio.run(MCPKit(servers=[{"name": "web", "url": url}]).open(None))


# -- in a sandbox ------------------------------------------------------------------------


class PipeSandboxProcess(SandboxProcess):
    """A local subprocess, stderr merged into stdout, as sandboxes give them."""

    def __init__(self, proc: asyncio.subprocess.Process, sandbox: SubprocessSandbox) -> None:
        self.proc, self.sandbox = proc, sandbox

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def read(self, n: int = 65536) -> bytes:
        assert self.proc.stdout is not None
        data = await self.proc.stdout.read(n)
        if not data and self.sandbox.dead:
            raise SandboxError("the sandbox died")
        return data

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    async def interrupt(self) -> None:
        self.proc.send_signal(signal.SIGINT)


class SubprocessSandbox(Sandbox):
    """Just enough of a sandbox: spawn and exec run local subprocesses; ``dead`` breaks it."""

    def __init__(self) -> None:
        self.dead = False
        self.engine_up = True
        self.processes: list[PipeSandboxProcess] = []

    async def engine_alive(self) -> bool:
        return self.engine_up

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        for process in self.processes:
            await process.kill()

    async def exec(
        self,
        cmd: str | list[str],
        timeout: float | None = 60.0,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        if self.dead:
            raise SandboxError("the sandbox died")
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else cmd
        proc = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        return ExecResult(out.decode(), "", proc.returncode)

    async def write_file(
        self, path: str, data: bytes | str, *, mode: int = 0o644, owner: str | None = None
    ) -> None:
        raise NotImplementedError

    async def read_file(self, path: str) -> bytes:
        raise NotImplementedError

    async def spawn(
        self,
        cmd: list[str],
        *,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> PipeSandboxProcess:
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**os.environ, **(env or {})},
        )
        process = PipeSandboxProcess(proc, self)
        self.processes.append(process)
        return process


def test_a_server_in_the_sandbox_talks_through_the_bridge() -> None:
    async def scenario() -> None:
        sandbox = SubprocessSandbox()
        kit = MCPKit(servers=[stdio("box", in_sandbox=True)])
        assert kit.needs_sandbox
        tools = by_name(await kit.open(sandbox))
        # Log lines share the server's output stream: they are skipped, not fatal.
        assert (await tools["log"].call({"message": "a log line"})).output == "logged"
        assert (await tools["add"].call({"a": 2, "b": 2})).output == "4"
        assert "a log line" in tools["add"].connection._bridge.tail()
        assert (await tools["fail"].call({})).is_error
        # The server dies alone (the sandbox is fine): an error result for the model.
        pid = await server_pid(tools["add"])
        os.kill(pid, signal.SIGKILL)
        result = await tools["add"].call({"a": 1, "b": 1})
        assert result.is_error and result.output.startswith("Error: MCP server 'box' exited")
        await kit.release(list(tools.values()))

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("engine_up", "outcome"),
    [(False, "infra_error"), (True, "sandbox_lost")],
    ids=["engine-gone", "engine-answers"],
)
def test_a_sandbox_dying_mid_episode_is_charged_by_whether_its_engine_answers(
    engine_up: bool, outcome: str
) -> None:
    """The engine gone: infrastructure (replayed). The engine answering: the sandbox's
    own loss after the agent acted (scored 0, never replayed)."""

    async def scenario() -> None:
        sandbox = SubprocessSandbox()
        sandbox.engine_up = engine_up
        kit = MCPKit(servers=[stdio("box", in_sandbox=True)])
        tools = await kit.open(sandbox)
        model = ScriptedModel(
            [
                ModelOutput(tool_calls=[tool_call("add", {"a": 1, "b": 2})]),
                ModelOutput(tool_calls=[tool_call("add", {"a": 1, "b": 2})]),
                "done",
            ]
        )
        steps = 0

        def on_step(_: Any) -> None:  # the sandbox dies after the first tool call
            nonlocal steps
            steps += 1
            if steps == 2:
                sandbox.dead = True
                for process in sandbox.processes:
                    process.proc.kill()

        traj = await run_episode(FakeEnv(length=1), model, tools, sandbox=sandbox, on_step=on_step)
        await kit.release(tools)
        assert traj.steps[0].tool_events[0].output == "3"
        assert traj.outcome == outcome and "the sandbox died" in (traj.error or "")

    asyncio.run(scenario())


def test_a_server_in_a_local_sandbox() -> None:
    from gem_eval.sandbox.local import LocalSandbox

    async def scenario() -> None:
        # unsafe: bubblewrap hides /root, where this venv's interpreter lives.
        async with LocalSandbox(unsafe=True) as sandbox:
            kit = MCPKit(servers=[stdio("box", in_sandbox=True)])
            tools = by_name(await kit.open(sandbox))
            assert (await tools["add"].call({"a": 3, "b": 4})).output == "7"
            pid = await server_pid(tools["add"])
            await kit.release(list(tools.values()))
            assert gone(pid)

    asyncio.run(scenario())


# -- naming ------------------------------------------------------------------------------


def _listed(name: str, *tools: str, **config: Any) -> MCPConnection:
    """A connection (never started) whose server lists ``tools``."""
    from mcp.types import Tool as ServerTool

    connection = MCPConnection(ServerConfig(name=name, url="http://x/mcp", **config))
    connection.tools = [ServerTool(name=t, input_schema={"type": "object"}) for t in tools]
    return connection


@pytest.mark.parametrize(
    ("prefix", "names"),
    [
        (None, ["a__add", "echo", "b__add", "web.fetch"]),
        (True, ["a__add", "a__echo", "b__add", "b__web_fetch"]),
    ],
)
def test_tool_names(prefix: bool | None, names: list[str]) -> None:
    kit = MCPKit(servers=[{"name": "a", "url": "http://x"}], prefix=prefix)
    tools = kit._make_tools([_listed("a", "add", "echo"), _listed("b", "add", "web.fetch")])
    expected = [n.replace(".", "_") for n in names]  # function names allow [A-Za-z0-9_-]
    assert [t.name for t in tools] == expected
    assert [t.remote_name for t in tools] == ["add", "echo", "add", "web.fetch"]


def test_clashing_names_without_a_prefix_are_an_error() -> None:
    kit = MCPKit(servers=[{"name": "a", "url": "http://x"}], prefix=False)
    with pytest.raises(
        UserError, match="two MCP tools would both be called 'add': set prefix: true"
    ):
        kit._make_tools([_listed("a", "add"), _listed("b", "add")])


def test_the_allow_list_picks_tools_and_must_name_real_ones() -> None:
    kit = MCPKit(servers=[{"name": "a", "url": "http://x"}])
    tools = kit._make_tools([_listed("a", "add", "echo", "rm", tools=["add", "echo"])])
    assert [t.name for t in tools] == ["add", "echo"]
    with pytest.raises(UserError, match=r"MCP server 'a' has no tool 'mul' \(its tools: add\)"):
        kit._make_tools([_listed("a", "add", tools=["mul"])])


# -- an agent episode --------------------------------------------------------------------


def test_an_agent_calls_a_server_tool_in_an_episode(
    loop: BackgroundLoop, notes: tuple[MCPKit, dict[str, MCPTool]]
) -> None:
    model = ScriptedModel(
        [ModelOutput(tool_calls=[tool_call("add", {"a": 19, "b": 23}, id="c1")]), "42"]
    )
    traj = loop.run(run_episode(FakeEnv(length=1), model, list(notes[1].values())))
    assert traj.outcome == "completed"
    event = traj.steps[0].tool_events[0]
    assert (event.name, event.output, event.is_error) == ("add", "42", False)
    assert {"role": "tool", "tool_call_id": "c1", "content": "42"} in traj.messages
    assert model.calls[1][-1]["content"] == "42"  # the model saw the server's answer


# -- settings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "servers must be a non-empty list"),
        ({"servers": []}, "servers must be a non-empty list"),
        ({"servers": [{"name": "s"}]}, "servers[0] (s): give either command (stdio) or url"),
        (
            {"servers": [{"name": "s", "command": "x", "url": "http://h/mcp"}]},
            "servers[0] (s): give either command (stdio) or url",
        ),
        (
            {"servers": [{"name": "s", "url": "http://h/mcp", "args": ["a"]}]},
            "servers[0] (s): args only go with command, not url",
        ),
        (
            {"servers": [{"name": "s", "command": "x", "headers": {"A": "b"}}]},
            "servers[0] (s): headers only go with url, not command",
        ),
        (
            {"servers": [{"name": "s", "url": "ftp://h"}]},
            "servers[0] (s): url: String should match",
        ),
        (
            {"servers": [{"name": "a b", "command": "x"}]},
            "servers[0] (a b): name: String should match",
        ),
        ({"servers": [{"name": "s", "comand": "x"}]}, "servers[0] (s): comand: Extra inputs"),
        ({"servers": ["python srv.py"]}, "servers[0]: must be a mapping, got str"),
        ({"servers": [{"name": "s", "command": "x"}] * 2}, "two servers are named 's'"),
        (
            {"servers": [{"name": "s", "command": "x", "timeout_s": 0}]},
            "servers[0] (s): timeout_s: Input should be greater than 0",
        ),
        (
            {"servers": [{"name": "s", "command": "x", "in_sandbox": True}], "shared": True},
            "in_sandbox servers live with an episode's sandbox: not shared",
        ),
        ({"servers": [{"name": "s", "command": "x"}], "timeout_s": -1}, "timeout_s must be"),
        ({"servers": [{"name": "s", "command": "x"}], "prefix": "yes"}, "prefix must be true"),
        ({"servers": [{"name": "s", "command": "x"}], "output_limit": 0}, "output_limit must be"),
        ({"servers": [{"name": "s", "command": "x"}], "server": []}, "unexpected keyword"),
    ],
)
def test_bad_settings_are_one_line_errors(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as info:
        build_kit("mcp", settings)
    text = str(info.value)
    assert text.startswith("tool 'mcp': ") and message in text, text
    assert "\n" not in text


def test_good_settings_and_what_needs_a_sandbox() -> None:
    kit = build_kit("mcp", {"servers": [stdio(), {"name": "web", "url": "https://h/mcp"}]})
    assert isinstance(kit, MCPKit) and not kit.needs_sandbox
    assert [s.transport for s in kit.servers] == ["stdio", "http"]
    boxed = build_kit("mcp", {"servers": [stdio(in_sandbox=True)]})
    assert boxed.needs_sandbox
    with pytest.raises(GemEvalError, match="need a sandbox"):
        asyncio.run(boxed.open(None))


def test_importing_the_kit_does_not_import_the_sdk() -> None:
    code = "import sys, gem_eval.tools.mcp; print('mcp' in sys.modules or 'anyio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
