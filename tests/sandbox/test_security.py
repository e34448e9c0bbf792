"""Attacks on ``DockerSandbox``, each tried for real inside a container.

A fork bomb, a memory hog, the network, the grader's files, a command that never ends,
an output flood, and a container that dies under the agent: each must be contained
(and the host, and a sandbox beside it, unaffected) or, for the last, end the episode
as an infrastructure failure that is not scored.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gem_eval.agent import run_episode
from gem_eval.errors import SandboxError
from gem_eval.models import Message, ModelOutput, ScriptedModel, tool_call
from gem_eval.runner.scoring import score
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.tools.bash import BashTool
from tests.fakes import FakeEnv

pytestmark = pytest.mark.docker

_URLOPEN = """
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=3)
except Exception as exc:
    print(type(exc).__name__, exc)
else:
    print("REACHED")
"""

# Forks children that sleep until the parent cannot fork any more, then kills them.
_FORK_LOOP = """
import os, signal, time
children = []
try:
    while len(children) < 10_000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
except OSError as exc:
    print("fork refused after", len(children), exc.strerror, flush=True)
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def bystander() -> Iterator[DockerSandbox]:
    """A sandbox started beside the attacked ones; it must keep working."""
    box = DockerSandbox(run_id=f"test-{uuid.uuid4().hex[:8]}")
    try:
        asyncio.run(box.start())
        yield box
    finally:
        asyncio.run(box.close())


async def _still_works(box: DockerSandbox) -> None:
    result = await box.exec("echo fine", timeout=10)
    assert (result.stdout, result.exit_code) == ("fine\n", 0)


def test_fork_bomb_is_stopped_by_the_pids_limit(bystander: DockerSandbox) -> None:
    async def scenario() -> None:
        box = DockerSandbox(pids=64)
        await box.start()
        try:
            # A counted fork loop: refused below the limit, and the container recovers.
            counted = await box.exec(["python3", "-c", _FORK_LOOP], timeout=30)
            assert counted.ok, counted.stderr
            assert "fork refused after" in counted.stdout
            assert int(counted.stdout.split()[3]) < 64
            await _still_works(box)

            # The real thing: it forks forever, and keeps trying after its shell is gone.
            began = time.monotonic()
            bomb = await box.exec(["bash", "-c", ":(){ :|:& };:; wait"], timeout=3)
            assert time.monotonic() - began < 20
            assert "Resource temporarily unavailable" in bomb.stderr
            processes = await asyncio.to_thread(box.container.top)
            assert len(processes["Processes"]) <= 64
            await _still_works(bystander)
            host = await asyncio.to_thread(subprocess.run, ["true"], timeout=10)
            assert host.returncode == 0
        finally:
            began = time.monotonic()
            await box.close()
            assert time.monotonic() - began < 20

    asyncio.run(scenario())


def test_memory_hog_is_killed_alone(bystander: DockerSandbox) -> None:
    async def scenario() -> None:
        box = DockerSandbox(memory="128m")
        await box.start()
        try:
            # A process already running in the same container must outlive the hog.
            neighbour = await box.spawn(["cat"])
            hog = "b = bytearray(512 * 1024 * 1024); print('allocated', len(b))"
            result = await box.exec(["python3", "-c", hog], timeout=60)
            assert "allocated" not in result.stdout
            assert result.exit_code == 137 or "MemoryError" in result.stderr
            await neighbour.write(b"still here\n")
            assert await asyncio.wait_for(neighbour.read(), 10) == b"still here\n"
            await neighbour.kill()
            await _still_works(box)
            await _still_works(bystander)
        finally:
            await box.close()

    asyncio.run(scenario())


def test_no_network_without_permission(bystander: DockerSandbox) -> None:
    async def scenario() -> None:
        interfaces = await bystander.exec("ls /sys/class/net")
        assert interfaces.stdout.split() == ["lo"]
        for url in ("http://1.1.1.1", "http://deb.debian.org/debian/"):
            tried = await bystander.exec(["python3", "-c", _URLOPEN, url], timeout=20)
            assert tried.ok and "REACHED" not in tried.stdout
            assert "URLError" in tried.stdout
        # network=True gives the container an interface (reaching the Internet is not
        # something a test should depend on).
        async with DockerSandbox(network=True) as networked:
            listed = await networked.exec("ls /sys/class/net")
            assert "eth0" in listed.stdout.split()

    asyncio.run(scenario())


def test_agent_cannot_change_the_graders_files(bystander: DockerSandbox) -> None:
    """Graders laid out in a directory of their own, written as root, as a task would."""
    grader = f"/grader-{uuid.uuid4().hex[:6]}"
    files = {f"{grader}/test_solution.py": b"assert solve() == 42\n", f"{grader}/key": b"42\n"}
    attempts = [
        f"echo x > {grader}/key",
        f"echo x >> {grader}/test_solution.py",
        f"rm -rf {grader}",
        f"rm -f {grader}/key",
        f"mv {grader}/key /tmp/key",
        f"chmod 777 {grader} {grader}/key",
        f"touch {grader}/conftest.py",
        f"ln -s /tmp {grader}/link",
    ]

    async def scenario() -> None:
        for path, data in files.items():
            await bystander.write_file(path, data, owner="root")
        for attempt in attempts:
            tried = await bystander.exec(attempt)
            assert tried.exit_code != 0, f"the agent succeeded at: {attempt}"
        for path, data in files.items():
            assert await bystander.read_file(path) == data
        listing = await bystander.exec(f"ls -A {grader}")
        assert sorted(listing.stdout.split()) == ["key", "test_solution.py"]
        # The checks mean something: root can change them.
        assert (await bystander.exec(f"echo x >> {grader}/key", user="root")).ok

    asyncio.run(scenario())


def test_a_command_that_never_ends_is_killed_at_its_timeout(bystander: DockerSandbox) -> None:
    needle = f"gem-eval-spin-{uuid.uuid4().hex[:8]}"
    # Ignores SIGTERM and SIGINT: only the KILL after the grace period ends it.
    stubborn = f"trap '' TERM INT; while :; do :; done # {needle}"

    async def scenario() -> None:
        began = time.monotonic()
        result = await bystander.exec(["bash", "-c", stubborn], timeout=1)
        elapsed = time.monotonic() - began
        assert result.timed_out and result.exit_code is None
        assert 1 <= elapsed < 8
        left = await bystander.exec(["ps", "-eo", "args"], user="root")
        assert needle not in left.stdout

    asyncio.run(scenario())


def test_output_floods_are_capped(bystander: DockerSandbox) -> None:
    async def scenario() -> None:
        began = time.monotonic()
        flood = await bystander.exec("head -c 20000000 /dev/zero | tr '\\0' x", timeout=60)
        assert time.monotonic() - began < 20
        assert flood.ok and len(flood.stdout) < 66000
        assert flood.stdout.endswith(
            f"[... {20_000_000 - 65536} bytes cut: output limit is 65536 bytes ...]"
        )
        # An endless one ends at its timeout, still capped.
        endless = await bystander.exec("yes", timeout=2)
        assert endless.timed_out and len(endless.stdout) < 66000
        assert "bytes cut" in endless.stdout

    asyncio.run(scenario())


@pytest.mark.parametrize("crash", ["kill", "remove"])
def test_a_container_lost_after_the_agent_acted_is_sandbox_lost(crash: str) -> None:
    """The container dies between two bash calls while the engine answers: the episode
    ends as ``sandbox_lost``, scored 0 and never replayed (an agent must not erase a
    failure by losing its sandbox; the engine's own failures stay ``infra_error``)."""

    async def scenario() -> None:
        box = DockerSandbox()
        await box.start()
        tool = BashTool(timeout_s=10)

        def crash_container() -> None:
            if crash == "kill":
                subprocess.run(["docker", "kill", str(box.id)], check=True, capture_output=True)
            else:
                box.container.remove(force=True)

        def reply(messages: list[Message]) -> Any:
            tool_results = sum(1 for m in messages if m["role"] == "tool")
            if tool_results == 0:
                return ModelOutput(tool_calls=[tool_call("bash", {"command": "echo one"})])
            if tool_results == 1:
                crash_container()
                return ModelOutput(tool_calls=[tool_call("bash", {"command": "echo two"})])
            return "\\boxed{42}"  # the episode would complete (and score) from here

        try:
            traj = await run_episode(
                FakeEnv(length=1), ScriptedModel(reply), [tool], sandbox=box, seed=0
            )
            assert traj.outcome == "sandbox_lost", traj.steps[-1].tool_events
            assert traj.error is not None and "SandboxLostError" in traj.error
            assert traj.steps[0].tool_events[0].output == "one\n[exit code 0]"
            assert traj.scored and score(traj, "success", 1.0) == 0
            with pytest.raises(SandboxError):
                await box.exec("true")
        finally:
            await tool.aclose()
            await box.close()

    asyncio.run(scenario())
