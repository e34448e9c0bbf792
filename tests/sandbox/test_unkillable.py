"""Nothing an agent does inside its sandbox makes the sandbox fail as the infrastructure
would: PID 1 survives every kill, orphans are reaped, a fork bomb is ended, a lost
container says so (``SandboxLostError``), and a bubblewrap command cannot reach the harness.

Docker tests run each case against both keep-alives (the compiled ``gem-eval-init`` and
the ``sh`` fallback; see ``gem_eval/sandbox/container_init.py``), as root and as the agent.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from gem_eval.agent import run_episode
from gem_eval.errors import SandboxError, SandboxLostError
from gem_eval.models import Message, ModelOutput, ScriptedModel, tool_call
from gem_eval.sandbox import container_init, docker_launch, docker_rescue, engine
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.sandbox.local import LocalSandbox
from gem_eval.sandbox.static_program import host_arch
from gem_eval.tools.bash import BashTool
from tests.conftest import IN_CI
from tests.fakes import FakeEnv

KILLS = [
    "kill -9 -1",
    "kill 1",
    "kill -9 1",
    "kill -STOP 1",
    "kill -SEGV 1; kill -ABRT 1; kill -HUP 1; kill -INT 1; kill -QUIT 1; kill -USR1 1",
    # every process, again and again (a shell that got in between dies in the next round)
    "for i in 1 2 3 4 5 6 7 8 9 10; do kill -9 -1; kill -TERM -1; kill -9 1; done",
]
# Orphans that exit while PID 1 is their parent; then the zombies in /proc are counted.
ORPHANS = """
i=0; while [ $i -lt 100 ]; do (sleep 0.3 &); i=$((i+1)); done; sleep 2
z=0
for f in /proc/[0-9]*/stat; do
  read -r pid comm state rest < "$f" 2>/dev/null && [ "$state" = Z ] && z=$((z+1))
done
echo "zombies=$z"
"""
TIGHT_BOMB = (
    "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
)
# bash retries a refused fork (with a back-off) and goes on; the sleepers stay.
SHELL_BOMB = "while :; do sleep 1000 & done"


@pytest.fixture(params=["gem-eval-init", "sh"])
def init(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Which keep-alive the containers of the test get."""
    if request.param == "sh":
        monkeypatch.setattr(container_init, "binary", lambda os_, arch: None)
    elif container_init.binary("linux", host_arch()) is None and not IN_CI:
        pytest.skip("no C compiler with a static libc here: only the sh keep-alive runs")
    yield request.param


@asynccontextmanager
async def started(init: str, **kwargs: Any) -> AsyncIterator[DockerSandbox]:
    box = DockerSandbox(run_id=f"test-{uuid.uuid4().hex[:8]}", **kwargs)
    try:
        await box.start()
        assert box.launched is not None and box.launched.init == init
        yield box
    finally:
        await box.close()


async def answers(box: DockerSandbox) -> None:
    """The sandbox still runs commands, as the agent and as root (the grader)."""
    assert (await box.exec("echo alive")).stdout == "alive\n"
    assert await box.run_root("id -u", "checking root") == "0\n"
    await box.check_running()


async def pid1_state(box: DockerSandbox) -> str:
    status = await box.run_root("grep '^State:' /proc/1/status", "reading PID 1's state")
    return status.split()[1]


@pytest.mark.docker
@pytest.mark.parametrize("user", ["root", "agent"])
def test_pid1_survives_every_kill(init: str, user: str) -> None:
    async def scenario() -> None:
        async with started(init) as box:
            for command in KILLS:
                await box.exec(command, user=user, timeout=30)
                await answers(box)
                assert await pid1_state(box) == "S", command  # not T (stopped)

    asyncio.run(scenario())


@pytest.mark.docker
@pytest.mark.parametrize("command", ["kill -9 -1", "kill 1", ":(){ :|:& };: 2>/dev/null"])
def test_a_root_agent_that_kills_everything_is_still_graded(command: str) -> None:
    """Through the bash tool and the agent loop, as root (Terminal-Bench's agent): the
    episode goes on and is scored, not lost or replayed."""
    tool = BashTool(timeout_s=10)

    def reply(messages: list[Message]) -> Any:
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < 2:
            return ModelOutput(tool_calls=[tool_call("bash", {"command": command})])
        if done == 2:
            return ModelOutput(tool_calls=[tool_call("bash", {"command": "echo two"})])
        return "\\boxed{42}"

    async def scenario() -> None:
        async with started(_any_init(), user="root", pids=128) as box:
            try:
                traj = await run_episode(
                    FakeEnv(length=1), ScriptedModel(reply), [tool], sandbox=box, seed=0
                )
            finally:
                await tool.aclose()
            assert traj.outcome == "completed", traj.error
            assert traj.scored
            outputs = [e.output for step in traj.steps for e in step.tool_events]
            assert len(outputs) == 3 and outputs[-1].startswith("two"), outputs
            await answers(box)

    asyncio.run(scenario())


@pytest.mark.docker
def test_orphans_are_reaped(init: str) -> None:
    async def scenario() -> None:
        async with started(init) as box:
            counted = await box.exec(ORPHANS, timeout=60)
            assert counted.stdout.strip() == "zombies=0", counted

    asyncio.run(scenario())


@pytest.mark.docker
def test_pid1_cannot_be_made_the_oom_victim(init: str) -> None:
    """Root raising PID 1's ``oom_score_adj``, then exhausting memory, stopped the
    container before ``/proc/1`` was mounted read-only."""
    hogs = (
        "for i in 1 2 3 4 5 6; do python3 -c 'import time; a = bytearray(50 << 20); "
        'a[::4096] = b"x" * len(a[::4096]); time.sleep(3)\' & done; wait'
    )

    async def scenario() -> None:
        async with started(init, memory="256m") as box:
            raised = await box.exec("echo 1000 > /proc/1/oom_score_adj", user="root")
            assert not raised.ok and "Read-only file system" in raised.stderr
            await box.exec(hogs, user="root", timeout=60)
            await answers(box)

    asyncio.run(scenario())


@pytest.mark.docker
def test_the_compiled_init_cannot_be_traced() -> None:
    """Root in the container cannot ptrace PID 1 (non-dumpable, no CAP_SYS_PTRACE), so
    it cannot make it call exit(). (The sh keep-alive can be traced: its known gap.)"""
    attach = (
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
        "print(libc.ptrace(16, 1, 0, 0), os.strerror(ctypes.get_errno()))"
    )

    async def scenario() -> None:
        if container_init.binary("linux", host_arch()) is None and not IN_CI:
            pytest.skip("no C compiler with a static libc here")
        async with started("gem-eval-init") as box:
            traced = await box.exec(["python3", "-c", attach], user="root")
            assert traced.stdout.strip() == "-1 Operation not permitted", traced
            await answers(box)

    asyncio.run(scenario())


@pytest.mark.docker
@pytest.mark.parametrize("bomb", ["tight", "shell"])
@pytest.mark.parametrize("user", ["root", "agent"])
def test_a_fork_bomb_is_ended_by_the_next_exec(init: str, bomb: str, user: str) -> None:
    """The agent's processes hold every PID: the harness's next exec still runs (after
    killing them), a new session still starts, and the box can be graded."""
    argv = ["python3", "-c", TIGHT_BOMB] if bomb == "tight" else ["bash", "-c", SHELL_BOMB]
    launch = " ".join(f"'{a}'" for a in argv)

    async def scenario() -> None:
        async with started(init, pids=64) as box:
            await box.exec(f"setsid {launch} >/dev/null 2>&1 &", user=user, timeout=10)
            await asyncio.sleep(1.5)
            assert await docker_rescue.pids_exhausted(box.id or "", box.pids)
            after = await box.exec("echo alive", user="root")
            assert after.stdout == "alive\n"
            assert "held all 64 PIDs" in after.stderr, after
            assert not await docker_rescue.pids_exhausted(box.id or "", box.pids)
            await box.write_file("/workspace/graded.txt", "ok")  # chown: an exec
            await answers(box)
            process = await box.spawn(["bash", "--noprofile", "--norc"])
            await process.write(b"echo session\n")
            assert (await process.read()).strip() == b"session"
            await process.kill()

    asyncio.run(scenario())


@pytest.mark.docker
def test_restart_keeps_files_and_brings_back_a_replaced_init(init: str) -> None:
    """The fork bomb's last resort: every process ends, the files stay, and PID 1 is
    gem-eval's again even if root replaced the binary."""

    async def scenario() -> None:
        async with started(init) as box:
            await box.write_file("/workspace/kept.txt", "kept")
            # Unlinked first: a running binary cannot be written over (ETXTBSY).
            await box.run_root(
                f"rm -f {container_init.PATH} && printf '#!/bin/sh\\nexit 0\\n' > "
                f"{container_init.PATH} && chmod 755 {container_init.PATH}",
                "replacing the init",
            )
            await docker_launch.restart(box, box.id or "")
            assert await box.read_file("/workspace/kept.txt") == b"kept"
            await answers(box)

    asyncio.run(scenario())


@pytest.mark.docker
@pytest.mark.parametrize("how", ["kill", "remove"])
def test_a_container_lost_from_outside_is_sandbox_lost(how: str) -> None:
    async def scenario() -> None:
        async with started(_any_init()) as box:
            process = await box.spawn(["sleep", "60"])
            if how == "kill":
                subprocess.run(["docker", "kill", str(box.id)], check=True, capture_output=True)
            else:
                box.container.remove(force=True)
            reason = "stopped" if how == "kill" else "gone"
            with pytest.raises(SandboxLostError) as raised:
                await box.exec("true")
            assert raised.value.reason == reason
            if how == "remove":  # a stopped container's files can still be read
                with pytest.raises(SandboxLostError):
                    await box.read_file("/etc/hostname")  # not FileNotFoundError
            with pytest.raises(SandboxLostError):
                await box.write_file("/workspace/x", "x")
            with pytest.raises(SandboxLostError):
                while await process.read():
                    pass
            assert await box.engine_alive()

    asyncio.run(scenario())


@pytest.mark.docker
def test_engine_alive_is_false_after_an_outage(monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon restart stops containers and then answers again: that loss is the
    engine's, so the sandbox no longer reports a live engine."""

    async def scenario() -> None:
        async with started(_any_init()) as box:
            assert await box.engine_alive()
            outages = engine.outages()
            monkeypatch.setattr(engine, "outages", lambda: outages + 1)
            assert not await box.engine_alive()

    asyncio.run(scenario())


def test_an_unreachable_engine_stays_a_plain_sandbox_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def unreachable(container_id: str) -> None:
        raise SandboxError("checking a container: connection refused")

    monkeypatch.setattr(docker_rescue, "inspect", unreachable)
    original = SandboxError("exec in a container: connection refused")
    assert asyncio.run(docker_rescue.lost_or(original, "c0ffee")) is original


@pytest.mark.docker
def test_one_huge_file_cannot_fill_the_disk() -> None:
    """Each file is capped at ``disk`` (a quota on the writable layer where the engine
    has one); writing past it fails and the sandbox still answers."""

    async def scenario() -> None:
        async with started(_any_init(), disk="50m") as box:
            assert box.launched is not None and box.launched.disk in ("quota", "per-file")
            wrote = await box.exec("dd if=/dev/zero of=/big bs=1M count=80", user="root")
            assert not wrote.ok
            size = await box.run_root("stat -c %s /big", "measuring the file")
            assert int(size) <= 50 * 1024 * 1024
            await answers(box)

    asyncio.run(scenario())


def test_a_refused_quota_falls_back_to_a_per_file_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """overlay2 on ext4 refuses ``storage_opt``: the engine is remembered as quota-less
    and the container gets the per-file cap instead."""
    asked: list[dict[str, Any]] = []

    async def create(box: Any, labels: Any, binary: Any, **kwargs: Any) -> str:
        asked.append(kwargs)
        if kwargs.get("storage_opt"):
            raise SandboxError(
                "creating a container: --storage-opt is supported only for overlay over "
                "xfs with 'pquota' mount option"
            )
        return "c0ffee"

    found = docker_launch.Engine("linux", "amd64", "overlay2")

    async def engine_facts() -> docker_launch.Engine:
        return found

    monkeypatch.setattr(docker_launch, "_create", create)
    monkeypatch.setattr(docker_launch, "engine", engine_facts)
    monkeypatch.setattr(container_init, "binary", lambda os_, arch: None)
    box = DockerSandbox(disk="1g")
    first = asyncio.run(docker_launch.create(box, {}))
    second = asyncio.run(docker_launch.create(box, {}))
    assert (first.disk, second.disk, found.quota) == ("per-file", "per-file", False)
    assert asked == [
        {"storage_opt": {"size": str(1 << 30)}},
        {"fsize": 1 << 30},
        {"fsize": 1 << 30},  # asked once: the engine's answer is remembered
    ]


@pytest.mark.bwrap
@pytest.mark.parametrize("user", ["root", "agent"])
def test_kill_all_in_bubblewrap_stays_inside(local_box: LocalSandbox, user: str) -> None:
    """Each bubblewrap command has its own PID namespace: ``kill -9 -1`` there cannot
    reach the harness or the host's processes of the same user."""
    canary = subprocess.Popen(["sleep", "60"])
    try:

        async def scenario() -> None:
            # An interlock, not a skip: outside a PID namespace of its own (where the
            # shell would not be PID 2) kill -9 -1 as root would end the host's processes.
            killed = await local_box.exec(
                'if [ "$$" -ne 2 ]; then echo "shares a PID namespace: pid $$"; exit 3; fi; '
                "kill -9 -1; kill -9 1",
                user=user,
                timeout=10,
            )
            assert "shares a PID namespace" not in killed.stdout
            assert (await local_box.exec("echo alive")).stdout == "alive\n"

        asyncio.run(scenario())
        assert canary.poll() is None
    finally:
        canary.kill()
        canary.wait()


def _any_init() -> str:
    """The keep-alive a sandbox gets here by default."""
    return "gem-eval-init" if container_init.binary("linux", host_arch()) else "sh"
