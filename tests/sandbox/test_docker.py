"""The :class:`Sandbox` contract, on ``DockerSandbox`` and ``LocalSandbox`` (bubblewrap),
and what is Docker's own (user, limits, labels of the container).

Isolation specific to each kind lives in ``test_local.py`` and ``test_security.py``.
One container serves the module where isolation between tests is not the point.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
import uuid
from pathlib import Path

import pytest

from gem_eval.errors import SandboxError
from gem_eval.sandbox import Sandbox, SandboxProcess
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.sandbox.local import LocalSandbox

KINDS = [
    pytest.param("local", marks=pytest.mark.bwrap),
    pytest.param("docker", marks=pytest.mark.docker),
]


@pytest.fixture(params=KINDS)
def box(request: pytest.FixtureRequest) -> Sandbox:
    sandbox: Sandbox = request.getfixturevalue(f"{request.param}_box")
    return sandbox


async def running(box: Sandbox, needle: str) -> bool:
    """Whether a process whose command line holds ``needle`` runs in ``box``.

    A bubblewrap sandbox gives each command its own PID namespace, so its processes are
    looked for on the host; a container's are listed inside it.
    """
    if isinstance(box, DockerSandbox):
        listing = await box.exec(["ps", "-eo", "args"], user="root", timeout=10)
        return needle in listing.stdout
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle.encode() in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


async def eventually_gone(box: Sandbox, needle: str, within: float = 3.0) -> bool:
    """True once no process with ``needle`` runs (killed processes take a moment to
    be reaped)."""
    ends = time.monotonic() + within
    while await running(box, needle):
        if time.monotonic() > ends:
            return False
        await asyncio.sleep(0.1)
    return True


async def read_until(process: SandboxProcess, text: bytes, timeout: float = 10) -> bytes:
    seen = b""

    async def loop() -> bytes:
        nonlocal seen
        while text not in seen:
            chunk = await process.read()
            if not chunk:
                raise AssertionError(f"EOF before {text!r}; got {seen!r}")
            seen += chunk
        return seen

    return await asyncio.wait_for(loop(), timeout)


def test_exec_returns_stdout_stderr_and_exit_code(box: Sandbox) -> None:
    result = asyncio.run(box.exec("echo out; echo err >&2; exit 3"))
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert not result.timed_out and not result.ok
    # An argument list reaches the program as is (no shell splits "a b").
    listed = asyncio.run(box.exec(["printf", "%s|", "a b", "$HOME"]))
    assert listed.ok and listed.stdout == "a b|$HOME|"


def test_timeout_kills_the_command_and_its_children(box: Sandbox) -> None:
    needle = f"{uuid.uuid4().int % 10**6 + 10**6}.5"  # a unique sleep length to look for

    async def scenario() -> None:
        began = time.monotonic()
        result = await box.exec(f"sleep {needle} & sleep {needle}; echo never", timeout=1)
        elapsed = time.monotonic() - began
        assert result.timed_out and result.exit_code is None
        assert "never" not in result.stdout
        assert 1 <= elapsed < 6
        assert await eventually_gone(box, f"sleep {needle}"), "a child outlived the timeout"

    asyncio.run(scenario())


def test_output_flood_is_capped_with_the_size_cut(box: Sandbox) -> None:
    result = asyncio.run(
        box.exec("head -c 300000 /dev/zero | tr '\\0' a; head -c 100000 /dev/zero | tr '\\0' b >&2")
    )
    assert result.ok
    kept, _, note = result.stdout.partition("\n")
    assert kept == "a" * 65536
    assert note == "[... 234464 bytes cut: output limit is 65536 bytes ...]"
    assert result.stderr == "b" * 65536 + "\n[... 34464 bytes cut: output limit is 65536 bytes ...]"


def test_files_round_trip_and_belong_to_the_agent(box: Sandbox) -> None:
    data = bytes(range(256)) * 40

    async def scenario() -> None:
        await box.write_file("deep/er/data.bin", data)
        assert await box.read_file("deep/er/data.bin") == data
        assert await box.read_file(f"{box.workdir}/deep/er/data.bin") == data
        await box.write_file("/tmp/note.txt", "héllo\n")
        assert await box.read_file("/tmp/note.txt") == "héllo\n".encode()
        # Commands see the same bytes, and the agent may change its own files.
        seen = await box.exec(
            "test -O deep/er/data.bin && test -O /tmp/note.txt && "
            "md5sum < deep/er/data.bin && echo more >> /tmp/note.txt"
        )
        assert seen.ok, seen.stderr
        assert seen.stdout.split()[0] == hashlib.md5(data).hexdigest()
        assert await box.read_file("/tmp/note.txt") == "héllo\nmore\n".encode()
        with pytest.raises(FileNotFoundError):
            await box.read_file("no/such/file.txt")

    asyncio.run(scenario())


def test_root_owned_file_cannot_be_modified_or_deleted_by_the_agent(box: Sandbox) -> None:
    """A grader written with ``owner="root"`` must survive every attempt to change it:
    bubblewrap binds it read-only even inside the work directory; Docker refuses it there
    (the agent owns that directory) and protects it anywhere else."""
    name = f"grader_{uuid.uuid4().hex[:6]}.py"
    if isinstance(box, DockerSandbox):
        with pytest.raises(ValueError, match="cannot live in its work directory"):
            asyncio.run(box.write_file(name, b"x", owner="root"))
        name = f"/grader/{name}"
    original = b"assert solution() == 42\n"
    attempts = [
        f"echo 'pass' > {name}",
        f"echo 'pass' >> {name}",
        f"chmod 666 {name}",
        f"rm -f {name}",
        f"mv {name} moved.py",
        f"echo 'pass' > fake.py && mv -f fake.py {name}",
    ]

    async def scenario() -> None:
        await box.write_file(name, original, owner="root")
        for attempt in attempts:
            await box.exec(attempt)
            try:
                assert await box.read_file(name) == original, f"changed by: {attempt}"
            except FileNotFoundError:
                pytest.fail(f"the agent deleted the root-owned file with: {attempt}")
        mode = await box.exec(f"stat -c %a {name}")
        assert mode.stdout.strip() == "644"

    asyncio.run(scenario())


def test_env_vars_and_working_directory(box: Sandbox) -> None:
    async def scenario() -> None:
        assert (await box.exec("mkdir -p sub/dir")).ok
        here = await box.exec("pwd; id -u")
        assert here.stdout == f"{box.workdir}\n1000\n"  # the agent user, not root
        result = await box.exec(
            'echo "$A:$B"; pwd',
            env={"A": "1", "B": "two words"},
            cwd=f"{box.workdir}/sub/dir",
        )
        assert result.stdout == f"1:two words\n{box.workdir}/sub/dir\n"
        assert (await box.exec("id -u", user="root")).stdout == "0\n"

    asyncio.run(scenario())


def test_host_environment_does_not_leak_in(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-gem-eval-leak-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("GEM_EVAL_HOST_ONLY", secret)

    async def scenario() -> None:
        result = await box.exec("env", env={"PASSED": "yes"})
        assert "PASSED=yes" in result.stdout  # the listing is real
        assert secret not in result.stdout and "OPENAI_API_KEY" not in result.stdout
        process = await box.spawn(["env"], env={"PASSED": "yes"})
        try:
            listing = await read_until(process, b"PASSED=yes")
            while chunk := await asyncio.wait_for(process.read(), 10):
                listing += chunk
        finally:
            await process.kill()
        assert secret.encode() not in listing and b"OPENAI_API_KEY" not in listing

    asyncio.run(scenario())


_ECHO = """
import signal, sys
signal.signal(signal.SIGINT, lambda *_: print("got SIGINT", flush=True))
print("ready", flush=True)
for line in sys.stdin:
    print("echo:" + line.strip(), flush=True)
"""


def test_spawn_talks_interrupts_and_kills(box: Sandbox) -> None:
    needle = f"spawn-probe-{uuid.uuid4().hex}"

    async def scenario() -> None:
        process = await box.spawn(["python3", "-u", "-c", _ECHO, needle])
        try:
            await read_until(process, b"ready\n")
            await process.write(b"hello\n")
            await read_until(process, b"echo:hello\n")
            await process.interrupt()
            await read_until(process, b"got SIGINT\n")
            await process.write(b"again\n")  # it survived the interrupt
            await read_until(process, b"echo:again\n")
            assert await running(box, needle)
        finally:
            await process.kill()
        assert await eventually_gone(box, needle), "kill left the process running"
        assert await asyncio.wait_for(process.read(), 5) == b""

    asyncio.run(scenario())


@pytest.mark.parametrize("kind", KINDS)
def test_close_is_idempotent_and_destroys_the_sandbox(kind: str) -> None:
    async def scenario() -> None:
        make = LocalSandbox if kind == "local" else DockerSandbox
        await make().close()  # never started: nothing to do, no error
        box: Sandbox = make()
        await box.start()
        await box.write_file("x.txt", "x")
        if isinstance(box, DockerSandbox):
            from docker.errors import NotFound

            from gem_eval.sandbox import cleanup, docker_client

            container_id = box.id
            assert container_id in cleanup.tracked()
            await box.close()
            await box.close()
            with pytest.raises(NotFound):
                docker_client.client().containers.get(container_id)
            assert container_id not in cleanup.tracked()
            with pytest.raises(SandboxError):
                await box.exec("true")
        else:
            assert isinstance(box, LocalSandbox)
            where = box.host_path("x.txt")
            assert where.exists()
            await box.close()
            await box.close()
            assert not where.exists()
            with pytest.raises(RuntimeError, match="not started"):
                await box.exec("true")

    asyncio.run(scenario())


@pytest.mark.docker
def test_container_is_locked_down(docker_box: DockerSandbox) -> None:
    async def scenario() -> None:
        whoami = await docker_box.exec("id -un; grep NoNewPrivs /proc/self/status")
        assert whoami.stdout.split("\n")[0] == "agent"
        assert whoami.stdout.split()[-1] == "1"
        assert (await docker_box.exec("echo $GEM_EVAL_BOX")).stdout == "docker\n"

    asyncio.run(scenario())
    docker_box.container.reload()
    host = docker_box.container.attrs["HostConfig"]
    assert host["NetworkMode"] == "none" and not host.get("Init")  # PID 1: gem-eval's
    assert "/proc/1" in host["ReadonlyPaths"]
    assert host["Memory"] == host["MemorySwap"] == 1024**3
    assert host["PidsLimit"] == 256 and host["NanoCpus"] == 10**9
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert not host.get("Binds") and not host.get("Privileged")
    described = docker_box.describe()
    assert described["kind"] == "docker" and described["image"] == docker_box.image
    assert described["init"] in ("gem-eval-init", "sh")
    assert described["disk"] in ("quota", "per-file")
