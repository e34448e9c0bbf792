"""``LocalSandbox``: what bubblewrap isolates, its limits, and the explicit unsafe mode.

The behaviour it shares with ``DockerSandbox`` is tested on both in ``test_docker.py``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gem_eval.errors import SandboxUnavailableError
from gem_eval.sandbox.local import LocalSandbox

_URLOPEN = """
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=3)
except Exception as exc:
    print(type(exc).__name__, exc)
else:
    print("REACHED")
"""


@pytest.fixture
def box() -> Iterator[LocalSandbox]:
    sandbox = LocalSandbox(memory_mb=256)
    try:
        asyncio.run(sandbox.start())
        yield sandbox
    finally:
        asyncio.run(sandbox.close())


@pytest.mark.bwrap
def test_network_is_unreachable(box: LocalSandbox) -> None:
    assert len(socket.if_nameindex()) > 1  # the host has a network to hide

    async def scenario() -> None:
        interfaces = await box.exec(
            ["python3", "-c", "import socket; print(socket.if_nameindex())"]
        )
        assert interfaces.stdout.strip() == "[(1, 'lo')]"
        for url in ("http://1.1.1.1", "http://deb.debian.org/debian/"):
            tried = await box.exec(["python3", "-c", _URLOPEN, url], timeout=20)
            assert tried.ok and "REACHED" not in tried.stdout
            assert "URLError" in tried.stdout

    asyncio.run(scenario())


@pytest.mark.bwrap
@pytest.mark.parametrize("user", ["agent", "root"])
def test_the_host_file_system_is_read_only(box: LocalSandbox, user: str) -> None:
    probe = f"gem-eval-probe-{uuid.uuid4().hex[:8]}"
    targets = [f"/etc/{probe}", f"/usr/{probe}", f"/var/{probe}"]
    if not Path.cwd().is_relative_to("/tmp"):  # a checkout under /tmp is hidden, not shown
        targets.append(f"{Path.cwd()}/{probe}")

    async def scenario() -> None:
        for target in targets:
            tried = await box.exec(f"touch {target}", user=user)
            assert tried.exit_code != 0 and "Read-only file system" in tried.stderr, target
            assert not Path(target).exists()
        # ... while the work directory and /tmp are writable.
        assert (await box.exec(f"touch {probe} /tmp/{probe}", user=user)).ok

    asyncio.run(scenario())


@pytest.mark.bwrap
def test_root_and_home_are_hidden(box: LocalSandbox) -> None:
    home = Path.home()
    hidden_home = home.parts[1:2] in (("root",), ("home",))
    # A file of ours in the home directory, which the sandbox must not see.
    with tempfile.NamedTemporaryFile(dir=home if hidden_home else None) as mine:
        visible = [d for d in ("/root", "/home") if _listable(d) and os.listdir(d)]
        assert visible, "nothing on the host to hide: the test would prove nothing"

        async def scenario() -> None:
            listing = await box.exec("ls -A /root /home", user="root")
            assert listing.ok
            assert listing.stdout.split() == ["/home:", "/root:"]
            if hidden_home:
                seen = await box.exec(["cat", mine.name], user="root")
                assert seen.exit_code != 0 and "No such file" in seen.stderr

        asyncio.run(scenario())


def _listable(path: str) -> bool:
    try:
        os.listdir(path)
    except OSError:
        return False
    return True


@pytest.mark.bwrap
def test_host_processes_are_invisible(box: LocalSandbox) -> None:
    result = asyncio.run(box.exec(f"test -e /proc/{os.getpid()} && echo visible; ls /proc"))
    assert "visible" not in result.stdout
    pids = [int(name) for name in result.stdout.split() if name.isdigit()]
    assert pids and max(pids) < 20  # only the sandbox's few processes


@pytest.mark.bwrap
def test_memory_limit_stops_a_large_allocation(box: LocalSandbox) -> None:
    code = "b = bytearray(512 * 1024 * 1024); print('allocated')"
    result = asyncio.run(box.exec(["python3", "-c", code]))
    assert result.exit_code == 1 and "MemoryError" in result.stderr
    assert "allocated" not in result.stdout
    assert asyncio.run(box.exec("echo alive")).stdout == "alive\n"


@pytest.mark.bwrap
def test_files_outside_the_writable_directories_are_refused(box: LocalSandbox) -> None:
    with pytest.raises(ValueError, match="only hold files under"):
        asyncio.run(box.write_file("/etc/passwd", "x"))
    with pytest.raises(ValueError):
        asyncio.run(box.write_file("../../etc/passwd", "x"))


def test_missing_bubblewrap_is_refused_with_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gem_eval.sandbox.local.shutil.which", lambda _: None)
    with pytest.raises(SandboxUnavailableError, match=r"apt-get install bubblewrap.*unsafe"):
        asyncio.run(LocalSandbox().start())


def test_unsafe_mode_runs_in_a_private_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-gem-eval-leak-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    async def scenario() -> None:
        box = LocalSandbox(unsafe=True)
        await box.start()
        try:
            workdir = Path(box.workdir)
            assert workdir.is_dir() and workdir != Path.cwd()
            result = await box.exec("pwd; env")
            assert result.stdout.startswith(f"{workdir}\n")
            assert secret not in result.stdout
            assert box.describe() == {"kind": "local-unsafe"}
        finally:
            await box.close()
        assert not workdir.exists()

    asyncio.run(scenario())
