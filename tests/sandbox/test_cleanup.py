"""No container outlives its run: labels, leftovers of killed runs, the exit hook, and
the Provisioner after a run of episodes, finished or cancelled (Ctrl-C) mid-way."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from gem_eval.agent import run_episode
from gem_eval.models import Message, ModelOutput, ScriptedModel, tool_call
from gem_eval.records import SandboxSpec, TaskSpec, ToolSpec
from gem_eval.runner.provision import Provisioner
from gem_eval.sandbox import cleanup, docker_client
from gem_eval.sandbox.images import BASE_IMAGE
from gem_eval.trajectory import Trajectory
from tests.fakes import FakeEnv

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]

# A process that owns one container, then exits normally or waits to be killed.
_OWNER = """
import asyncio, sys, time
from gem_eval.sandbox.docker import DockerSandbox
box = DockerSandbox(run_id=sys.argv[1])
asyncio.run(box.start())
print(box.id, flush=True)
if sys.argv[2] == "hang":
    time.sleep(120)
"""


@pytest.fixture
def run_id() -> Iterator[str]:
    """A run id whose containers are removed whatever the test did."""
    rid = f"test-cleanup-{uuid.uuid4().hex[:8]}"
    yield rid
    cleanup.remove_leftovers(rid, include_live=True)


def exists(container_id: str) -> bool:
    from docker.errors import NotFound

    try:
        docker_client.client().containers.get(container_id)
    except NotFound:
        return False
    return True


def ids(containers: list[Any]) -> set[str]:
    return {c.id for c in containers}


def test_leftovers_of_dead_owners_are_removed_and_live_ones_kept(run_id: str) -> None:
    finished = subprocess.Popen(["true"])
    finished.wait()
    dead_pid = str(finished.pid)
    with pytest.raises(ProcessLookupError):
        os.kill(finished.pid, 0)
    here = socket.gethostname()
    owners = {
        "dead": {cleanup.HOST: here, cleanup.PID: dead_pid},
        "live": {cleanup.HOST: here, cleanup.PID: str(os.getpid())},
        "other machine": {cleanup.HOST: f"not-{here}", cleanup.PID: dead_pid},
    }
    made = {
        who: docker_client.client().containers.create(
            BASE_IMAGE,
            ["true"],
            network_mode="none",
            labels={cleanup.MANAGED: "1", cleanup.RUN: run_id, **owner},
        )
        for who, owner in owners.items()
    }
    assert ids(cleanup.find(run_id)) == {made["dead"].id}
    assert cleanup.remove_leftovers(f"{run_id}-other") == []  # another run's are not touched
    assert cleanup.remove_leftovers(run_id) == [made["dead"].short_id]
    assert not exists(made["dead"].id)
    assert ids(cleanup.find(run_id, include_live=True)) == {
        made["live"].id,
        made["other machine"].id,
    }


def test_find_tolerates_containers_removed_while_it_lists(
    run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = docker_client.client()
    labels = {cleanup.MANAGED: "1", cleanup.RUN: run_id}
    made = [
        client.containers.create(BASE_IMAGE, ["true"], network_mode="none", labels=labels)
        for _ in range(2)
    ]
    listing = client.api.containers

    def list_then_remove_one(*args: Any, **kwargs: Any) -> Any:
        rows = listing(*args, **kwargs)
        if made[0].id in {row["Id"] for row in rows}:
            made[0].remove(force=True)  # a run removes its own before it is inspected
        return rows

    monkeypatch.setattr(client.api, "containers", list_then_remove_one)
    assert ids(cleanup.find(run_id, include_live=True)) == {made[1].id}


def test_killed_and_exited_owners_leave_nothing_behind(run_id: str) -> None:
    """An owner that exits without closing its sandbox removes it at exit (the atexit
    hook); one killed with SIGKILL cannot, and ``remove_leftovers`` finds its container
    by its labels."""
    owners = {
        mode: subprocess.Popen(
            [sys.executable, "-c", _OWNER, run_id, mode],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for mode in ("exit", "hang")
    }
    try:
        made = {mode: p.stdout.readline().strip() for mode, p in owners.items() if p.stdout}
        assert all(made.values()), made
        assert owners["exit"].wait(30) == 0
        assert not exists(made["exit"]), "the exit hook did not remove the container"

        hung = docker_client.client().containers.get(made["hang"])
        assert hung.labels[cleanup.MANAGED] == "1" and hung.labels[cleanup.RUN] == run_id
        assert hung.labels[cleanup.PID] == str(owners["hang"].pid)
        assert hung.labels[cleanup.HOST] == socket.gethostname()
        assert cleanup.find(run_id) == []  # its owner is alive: not a leftover
        owners["hang"].send_signal(signal.SIGKILL)
        owners["hang"].wait(30)
        assert exists(made["hang"])  # SIGKILL: no exit hook ran
        assert cleanup.remove_leftovers(run_id) == [hung.short_id]
        assert not exists(made["hang"])
    finally:
        for process in owners.values():
            if process.poll() is None:
                process.kill()
                process.wait()


def _task(per: Literal["episode", "task"] = "episode") -> TaskSpec:
    return TaskSpec(
        id="sandboxed",
        env_id="fake",
        tools=[ToolSpec(name="bash", settings={"timeout_s": 60})],
        sandbox=SandboxSpec(type="docker", max_sandboxes=2, per=per),
    )


async def _play(provisioner: Provisioner, task: TaskSpec, model: ScriptedModel) -> Trajectory:
    async with provisioner.episode(task) as (tools, sandbox):
        return await run_episode(FakeEnv(length=1), model, tools, sandbox=sandbox, seed=0)


def test_provisioner_removes_every_container_after_a_run(run_id: str) -> None:
    async def scenario() -> list[str]:
        provisioner = Provisioner(run_id=run_id)
        try:
            models = [
                ScriptedModel(
                    [ModelOutput(tool_calls=[tool_call("bash", {"command": "hostname"})]), "ok"]
                )
                for _ in range(4)
            ]
            trajs = await asyncio.gather(*(_play(provisioner, _task(), m) for m in models))
            assert len(cleanup.find(run_id, include_live=True)) >= 1  # the warm ones
        finally:
            await provisioner.aclose()
        assert all(t.outcome == "completed" for t in trajs)
        return [t.steps[0].tool_events[0].output.split()[0] for t in trajs]

    hostnames = asyncio.run(scenario())
    assert len(set(hostnames)) == 4  # a fresh container per episode
    assert cleanup.find(run_id, include_live=True) == []
    assert not any(exists(name) for name in hostnames)  # a container's hostname is its id


async def _containers_running(run_id: str, needle: str) -> int:
    def count() -> int:
        found = 0
        for container in cleanup.find(run_id, include_live=True):
            try:
                rows = container.top()["Processes"] or []
            except Exception:  # removed meanwhile
                continue
            found += any(needle in " ".join(row) for row in rows)
        return found

    return await asyncio.to_thread(count)


@pytest.mark.parametrize(
    ("per", "moment"),
    [("episode", "starting"), ("episode", "running"), ("task", "starting")],
)
def test_provisioner_leaves_no_container_after_ctrl_c(
    run_id: str, per: Literal["episode", "task"], moment: str
) -> None:
    """Ctrl-C cancels the episodes while their containers start or while commands run
    in them; once they have wound down and the Provisioner is closed, no container of
    the run remains."""
    needle = f"sleep {uuid.uuid4().int % 10**5 + 10**5}.5"
    asked: list[int] = []

    def reply(messages: list[Message]) -> Any:
        asked.append(1)
        return ModelOutput(tool_calls=[tool_call("bash", {"command": needle})])

    async def scenario() -> None:
        provisioner = Provisioner(run_id=run_id)
        task = _task(per)
        episodes = [
            asyncio.create_task(_play(provisioner, task, ScriptedModel(reply))) for _ in range(4)
        ]
        if moment == "starting":
            await asyncio.sleep(0.15)  # Docker is creating containers (~0.3 s each)
            assert not asked, "an episode already ran: the start was not interrupted"
        else:
            for _ in range(100):
                if await _containers_running(run_id, needle) >= 2:
                    break
                await asyncio.sleep(0.1)
            else:
                pytest.fail("the commands never ran")
        for episode in episodes:  # Ctrl-C, passed on to the episodes as the runner does
            episode.cancel()
        ended = await asyncio.gather(*episodes, return_exceptions=True)
        assert all(isinstance(e, asyncio.CancelledError) for e in ended)
        await provisioner.aclose()
        if moment == "starting":
            # A container Docker was still creating would appear only now.
            await asyncio.sleep(1.0)

    asyncio.run(scenario())
    assert cleanup.find(run_id, include_live=True) == []
