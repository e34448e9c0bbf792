"""``SandboxPool``: fresh sandboxes handed out once, warm ones started ahead, nothing
left open after ``aclose``. A fake sandbox counts starts and closes; one test uses
real containers."""

from __future__ import annotations

import asyncio
import uuid
from typing import ClassVar

import pytest

from gem_eval.sandbox import ExecResult, Sandbox, SandboxProcess
from gem_eval.sandbox.pool import SandboxPool


class FakeSandbox(Sandbox):
    """Records its lifecycle; ``start`` takes ``delay`` seconds and raises ``fail``."""

    made: ClassVar[list[FakeSandbox]] = []

    def __init__(self, delay: float = 0.0, fail: Exception | None = None) -> None:
        self.delay, self.fail = delay, fail
        self.starting = self.started = self.closed = False
        self.closes = 0
        FakeSandbox.made.append(self)

    async def start(self) -> None:
        self.starting = True
        await asyncio.sleep(self.delay)
        self.starting = False
        if self.fail is not None:
            raise self.fail
        self.started = True

    async def close(self) -> None:
        self.closes += 1
        self.closed = True

    async def exec(
        self,
        cmd: str | list[str],
        timeout: float | None = 60.0,
        user: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        raise NotImplementedError

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
    ) -> SandboxProcess:
        raise NotImplementedError


@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    FakeSandbox.made = []


def open_ones() -> list[FakeSandbox]:
    """Sandboxes started and not closed."""
    return [s for s in FakeSandbox.made if s.started and not s.closed]


async def settle() -> None:
    """Let background starts and closes run."""
    for _ in range(5):
        await asyncio.sleep(0.01)


def test_each_acquire_gets_a_distinct_started_sandbox() -> None:
    async def scenario() -> None:
        pool = SandboxPool(FakeSandbox, warm=2)
        got = [await pool.acquire() for _ in range(5)]
        assert len({id(s) for s in got}) == 5
        assert all(isinstance(s, FakeSandbox) and s.started and not s.closed for s in got)
        for sandbox in got:
            await pool.release(sandbox)
        await pool.aclose()

    asyncio.run(scenario())


def test_warm_sandboxes_are_started_ahead_and_refilled() -> None:
    async def scenario() -> None:
        pool = SandboxPool(lambda: FakeSandbox(delay=0.01), warm=3)
        first = await pool.acquire()
        await settle()
        # One handed out, and the pool is back to three ready.
        assert len(FakeSandbox.made) == 4 and len(open_ones()) == 4
        waiting = [s for s in open_ones() if s is not first]
        second = await pool.acquire()
        assert second in waiting  # served from the warm ones, not started on demand
        await settle()
        assert len(FakeSandbox.made) == 5
        await pool.release(first)
        await pool.release(second)
        await pool.aclose()

    asyncio.run(scenario())


def test_released_sandboxes_are_closed() -> None:
    async def scenario() -> None:
        pool = SandboxPool(FakeSandbox, warm=1)
        sandbox = await pool.acquire()
        assert isinstance(sandbox, FakeSandbox)
        await pool.release(sandbox)
        await settle()
        assert sandbox.closed and sandbox.closes == 1
        await pool.aclose()
        assert sandbox.closes == 1

    asyncio.run(scenario())


def test_aclose_closes_everything_the_pool_holds() -> None:
    async def scenario() -> None:
        pool = SandboxPool(FakeSandbox, warm=3)
        used = await pool.acquire()
        await pool.release(used)
        await settle()
        assert len(open_ones()) == 3  # the warm ones
        await pool.aclose()
        assert open_ones() == []
        assert all(s.closes == 1 for s in FakeSandbox.made)
        with pytest.raises(RuntimeError, match="closed"):
            await pool.acquire()

    asyncio.run(scenario())


def test_aclose_racing_with_starts_in_flight_leaves_nothing_open() -> None:
    async def scenario() -> None:
        pool = SandboxPool(lambda: FakeSandbox(delay=0.2), warm=4)
        held = await pool.acquire()
        await pool.release(held)  # a close in flight too
        await asyncio.sleep(0.05)
        in_flight = [s for s in FakeSandbox.made if s.starting]
        assert in_flight, "no start was in flight: the race was not tried"
        await pool.aclose()
        assert all(not s.starting for s in FakeSandbox.made)  # aclose waited for them
        assert open_ones() == []
        assert all(s.closed for s in in_flight)

    asyncio.run(scenario())


@pytest.mark.parametrize("warm", [0, 2])
def test_a_start_failure_reaches_the_acquirer(warm: int) -> None:
    async def scenario() -> None:
        engine = {"down": True}

        def factory() -> FakeSandbox:
            return FakeSandbox(fail=ConnectionError("engine down") if engine["down"] else None)

        pool = SandboxPool(factory, warm=warm)
        with pytest.raises(ConnectionError, match="engine down"):
            await pool.acquire()
        await settle()
        failed = list(FakeSandbox.made)
        assert failed and all(s.closed for s in failed)  # half-started ones cleaned up
        # Once starts work again the pool serves sandboxes (each failure already made
        # is reported once, to one acquirer).
        engine["down"] = False
        later: Sandbox | None = None
        for _ in range(len(failed) + 1):
            try:
                later = await pool.acquire()
            except ConnectionError:
                continue
            break
        assert isinstance(later, FakeSandbox) and later.started
        await pool.release(later)
        await pool.aclose()
        assert open_ones() == []

    asyncio.run(scenario())


@pytest.mark.docker
def test_a_pool_of_containers_hands_out_fresh_ones_and_removes_them() -> None:
    from gem_eval.sandbox import cleanup
    from gem_eval.sandbox.docker import DockerSandbox

    run_id = f"test-pool-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        pool = SandboxPool(lambda: DockerSandbox(run_id=run_id), warm=2)
        try:
            one, two = await pool.acquire(), await pool.acquire()
            assert isinstance(one, DockerSandbox) and isinstance(two, DockerSandbox)
            assert one.id != two.id
            await one.write_file("mine.txt", "one's")
            assert (await two.exec("cat mine.txt")).exit_code != 0  # not shared
            await pool.release(one)
            await pool.release(two)
        finally:
            await pool.aclose()
        assert cleanup.find(run_id, include_live=True) == []

    try:
        asyncio.run(scenario())
    finally:
        cleanup.remove_leftovers(run_id, include_live=True)
