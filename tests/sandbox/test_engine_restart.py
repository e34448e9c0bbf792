"""The Docker engine going away and coming back: new sandboxes wait for it, ready ones
that died with it are not handed out, and a run's containers are removed by label.

Most tests stop and start a second dockerd of their own (the machine's daemon is
shared), reached through ``DOCKER_HOST``; the first uses the machine's daemon.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from gem_eval.errors import SandboxError
from gem_eval.sandbox import cleanup, docker_client, engine
from gem_eval.sandbox.docker import DockerSandbox
from gem_eval.sandbox.images import BASE_IMAGE
from gem_eval.sandbox.pool import SandboxPool
from tests.fixtures import second_dockerd

pytestmark = pytest.mark.docker


def _labelled(run_id: str, pid: int) -> dict[str, str]:
    return {**cleanup.labels(run_id), cleanup.PID: str(pid)}


def _exists(container_id: str) -> bool:
    from docker.errors import NotFound

    try:
        docker_client.client().api.inspect_container(container_id)
    except NotFound:
        return False
    return True


def test_remove_run_removes_what_the_engine_holds_not_only_the_live_set() -> None:
    run_id = f"test-remove-run-{uuid.uuid4().hex[:8]}"
    other = subprocess.Popen(["sleep", "60"])  # another live process resuming the run
    finished = subprocess.Popen(["true"])
    finished.wait()
    client = docker_client.client()
    try:
        made = {
            who: client.containers.create(
                BASE_IMAGE, ["true"], network_mode="none", labels=_labelled(run_id, pid)
            ).id
            for who, pid in (("ours", os.getpid()), ("dead", finished.pid), ("live", other.pid))
        }
        stranger = client.containers.create(
            BASE_IMAGE, ["true"], network_mode="none", labels=_labelled(f"{run_id}-x", 1)
        ).id
        assert not cleanup.tracked() & set(made.values())  # unknown to the live set
        removed = asyncio.run(cleanup.remove_run(run_id))
        assert sorted(removed) == sorted(made[k][:12] for k in ("ours", "dead"))
        assert not _exists(made["ours"]) and not _exists(made["dead"])
        assert _exists(made["live"]) and _exists(stranger)
    finally:
        other.kill()
        other.wait()
        cleanup.remove_leftovers(run_id, include_live=True)
        cleanup.remove_leftovers(f"{run_id}-x", include_live=True)


@pytest.fixture(scope="module")
def daemon() -> Iterator[second_dockerd.SecondDockerd]:
    with second_dockerd.for_tests() as started:
        yield started


@pytest.fixture
def on_daemon(
    daemon: second_dockerd.SecondDockerd, monkeypatch: pytest.MonkeyPatch
) -> Iterator[second_dockerd.SecondDockerd]:
    """gem-eval's Docker client pointed at the second daemon (running), with a fresh
    engine state and live set; all restored afterwards."""
    if daemon.process is None:
        daemon.start()
    monkeypatch.setenv("DOCKER_HOST", daemon.host)
    monkeypatch.setattr(docker_client, "_client", None)
    monkeypatch.setattr(cleanup, "_tracked", set())
    for name, value in (("_down_since", None), ("_outages", 0), ("_gave_up", False)):
        monkeypatch.setattr(engine, name, value)
    monkeypatch.setattr(engine, "_reported", 0.0)
    yield daemon
    if daemon.process is None:
        daemon.start()
    ids = daemon.docker("ps", "-aq").stdout.split()
    if ids:
        daemon.docker("rm", "-f", *ids)


def _sandbox(run_id: str) -> DockerSandbox:
    return DockerSandbox(run_id=run_id, memory="256m")


async def _until(predicate: Callable[[], object], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{predicate} did not hold"
        await asyncio.sleep(0.05)


@pytest.mark.slow
def test_engine_alive_answers_for_the_daemon(on_daemon: second_dockerd.SecondDockerd) -> None:
    assert asyncio.run(docker_client.engine_alive())
    on_daemon.stop()
    assert not asyncio.run(docker_client.engine_alive())
    assert engine.is_down() and engine.outages() == 1
    on_daemon.start()
    assert asyncio.run(docker_client.engine_alive())
    assert not engine.is_down()


@pytest.mark.slow
def test_a_missing_container_is_not_a_missing_engine(
    on_daemon: second_dockerd.SecondDockerd,
) -> None:
    async def scenario() -> None:
        api = docker_client.client().api
        with pytest.raises(SandboxError, match="gone"):
            await docker_client.call("inspecting", api.inspect_container, "no-such-container")
        assert not engine.is_down()
        on_daemon.stop()
        with pytest.raises(SandboxError, match=engine.UNREACHABLE):
            await docker_client.call("inspecting", api.inspect_container, "no-such-container")
        assert engine.is_down()

    asyncio.run(scenario())
    assert engine.outages() == 1


@pytest.mark.slow
def test_new_sandboxes_wait_for_the_engine_and_dead_ready_ones_are_dropped(
    on_daemon: second_dockerd.SecondDockerd,
) -> None:
    run_id = f"test-gate-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        pool = SandboxPool(lambda: _sandbox(run_id), warm=2)
        label = f"{cleanup.RUN}={run_id}"
        try:
            first = await pool.acquire()
            await _until(lambda: len(on_daemon.containers(label)) == 3)  # two more ready
            before = set(on_daemon.containers(label))
            on_daemon.stop()  # kills every container
            await _until(engine.is_down)  # the watcher sees it; no call is needed
            waiting = asyncio.ensure_future(pool.acquire())
            await asyncio.sleep(3)
            assert not waiting.done()  # neither failed nor handed a dead one out
            on_daemon.start()
            second = await asyncio.wait_for(waiting, 120)
            assert second.id is not None and second.id[:12] not in before
            result = await second.exec("echo alive")
            assert result.ok and result.stdout.strip() == "alive"
            await pool.release(second)
        finally:
            await pool.aclose()
            await first.close()

    asyncio.run(scenario())
    # The dead ready ones could not be removed while the engine was away; the run's
    # last step (Provisioner.aclose) removes them by label.
    asyncio.run(cleanup.remove_run(run_id))
    assert on_daemon.containers(f"{cleanup.RUN}={run_id}") == []


@pytest.mark.slow
def test_the_wait_is_bounded_and_said_once(
    on_daemon: second_dockerd.SecondDockerd,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(engine.WAIT_VAR, "2")
    run_id = f"test-gate-{uuid.uuid4().hex[:8]}"

    async def scenario() -> list[BaseException | object]:
        docker_client.client()
        on_daemon.stop()
        assert not await docker_client.engine_alive()
        pool = SandboxPool(lambda: _sandbox(run_id), warm=0)
        try:
            return await asyncio.gather(*(pool.acquire() for _ in range(3)), return_exceptions=True)
        finally:
            await pool.aclose()

    with caplog.at_level(logging.WARNING, logger="gem_eval.sandbox"):
        outcomes = asyncio.run(scenario())
    assert all(isinstance(o, SandboxError) and engine.WAIT_VAR in str(o) for o in outcomes)
    gave_up = [r for r in caplog.records if "did not come back within 2 s" in r.getMessage()]
    assert len(gave_up) == 1


@pytest.mark.slow
def test_remove_run_waits_for_the_engine_to_return(
    on_daemon: second_dockerd.SecondDockerd,
) -> None:
    run_id = f"test-remove-run-{uuid.uuid4().hex[:8]}"

    async def scenario() -> list[str]:
        box = _sandbox(run_id)
        await box.start()
        on_daemon.stop()
        removing = asyncio.ensure_future(cleanup.remove_run(run_id, wait_s=120))
        await _until(engine.is_down)
        await asyncio.sleep(1)
        assert not removing.done()
        await asyncio.to_thread(on_daemon.start)
        return await removing

    removed = asyncio.run(scenario())
    assert len(removed) == 1
    assert on_daemon.containers(f"{cleanup.RUN}={run_id}") == []


@pytest.mark.slow
def test_remove_run_gives_up_in_one_line_naming_the_cleanup_command(
    on_daemon: second_dockerd.SecondDockerd, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = f"test-remove-run-{uuid.uuid4().hex[:8]}"

    async def scenario() -> list[str]:
        box = _sandbox(run_id)
        await box.start()
        on_daemon.stop()
        return await cleanup.remove_run(run_id, wait_s=2)

    with caplog.at_level(logging.WARNING, logger="gem_eval.sandbox"):
        assert asyncio.run(scenario()) == []
    command = f"`gem-eval sandbox cleanup --run {run_id}`"
    named = [r.getMessage() for r in caplog.records if command in r.getMessage()]
    assert len(named) == 1 and "did not come back within 2 s" in named[0]
    assert "\n" not in named[0]
    on_daemon.start()
    assert len(on_daemon.containers(f"{cleanup.RUN}={run_id}")) == 1  # what it warned of


def _has_docker0() -> bool:
    return subprocess.run(["ip", "link", "show", "docker0"], capture_output=True).returncode == 0


@pytest.mark.docker
@pytest.mark.slow
def test_the_second_daemon_leaves_the_hosts_bridge_alone(
    daemon: second_dockerd.SecondDockerd,
) -> None:
    """Started with --bridge=none in the host's network namespace, a dockerd deletes the
    host's docker0 (and with it every bridged container and `RUN` build of the real
    daemon): the test daemon runs in a namespace of its own."""
    if not _has_docker0():
        pytest.skip("this host has no docker0 to protect")
    daemon.stop()
    daemon.start()
    assert _has_docker0()
