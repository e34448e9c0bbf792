"""``HostCapacity``: the places for sandboxes sized to a fake host (``/proc/meminfo`` under a
temporary root, a fixed number of cores): the limit from memory, CPUs, the engine's errors
and the user's ceiling; starts that wait for memory; a pool and a Provisioner held to it."""

from __future__ import annotations

import asyncio
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from gem_eval.errors import SandboxError
from gem_eval.records import SandboxSpec, SidecarSpec
from gem_eval.sandbox.capacity import HostCapacity, footprint, is_resource_error
from gem_eval.sandbox.host import HostReader
from gem_eval.sandbox.pool import SandboxPool
from tests.sandbox.test_host import meminfo
from tests.sandbox.test_pool import FakeSandbox, open_ones, settle

GIB = 2**30


def host(root: Path, total: float = 64, available: float = 32, cores: int = 64) -> HostReader:
    """A fake host: ``total`` and ``available`` GiB of memory, ``cores`` CPUs."""
    meminfo(root, total, available)
    return HostReader(root, cores=cores)


def take(capacity: HostCapacity, n: int, memory: int = GIB, cpus: float = 1.0) -> int:
    """Take up to ``n`` places without waiting; how many were taken."""
    return sum(capacity.try_acquire(memory, cpus) for _ in range(n))


async def waits(coro: asyncio.Future[Any]) -> bool:
    """Whether ``coro`` is still waiting after the loop had a few turns (and polls)."""
    for _ in range(5):
        await asyncio.sleep(0.02)
    return not coro.done()


def test_the_limit_from_memory(tmp_path: Path) -> None:
    # 16 GiB machine (reserve 1 GiB), 5.5 GiB free: four 1 GiB sandboxes fit.
    capacity = HostCapacity(host(tmp_path, total=16, available=5.5))
    now = capacity.snapshot()
    assert (now.limit, now.reason, now.reserve) == (4, "memory", GIB)
    assert take(capacity, 10) == 4
    # Sandboxes of 2 GiB (the size last asked for): two fit.
    assert HostCapacity(host(tmp_path, total=16, available=5.5)).try_acquire(2 * GIB)
    smaller = HostCapacity(host(tmp_path, total=16, available=5.5))
    assert take(smaller, 10, memory=2 * GIB) == 2
    assert smaller.snapshot().limit == 2


def test_a_small_machine_keeps_a_tenth_back(tmp_path: Path) -> None:
    # 4 GiB machine: 0.4 GiB reserve; 2.5 GiB free holds two 1 GiB sandboxes.
    capacity = HostCapacity(host(tmp_path, total=4, available=2.5))
    assert take(capacity, 5) == 2
    assert capacity.snapshot().reserve == 4 * GIB // 10


def test_the_users_ceiling_binds_when_smallest(tmp_path: Path) -> None:
    capacity = HostCapacity(host(tmp_path), ceiling=3)
    assert (capacity.snapshot().limit, capacity.snapshot().reason) == (3, "max_sandboxes")
    assert take(capacity, 10) == 3


def test_the_ceiling_adds_up_the_pools_only_when_every_one_sets_it(tmp_path: Path) -> None:
    capacity = HostCapacity(host(tmp_path))
    capacity.set_ceiling("a", 2)
    assert capacity.ceiling == 2
    capacity.set_ceiling("b", 3)
    assert capacity.ceiling == 5
    capacity.set_ceiling("c", None)  # a pool at its kind's default: no ceiling overall
    assert capacity.ceiling is None


def test_the_limit_from_cpus(tmp_path: Path) -> None:
    # Two cores, four sandbox CPUs per core: eight 1-CPU sandboxes, four of 2 CPUs.
    capacity = HostCapacity(host(tmp_path, cores=2))
    assert (capacity.snapshot().limit, capacity.snapshot().reason) == (8, "cpu")
    assert take(capacity, 20) == 8
    assert take(HostCapacity(host(tmp_path, cores=2)), 20, cpus=2.0) == 4


def test_one_sandbox_may_always_start(tmp_path: Path) -> None:
    capacity = HostCapacity(host(tmp_path, total=16, available=0.5))
    assert take(capacity, 3) == 1  # none of ours alive: a run makes progress


def test_sandboxes_held_for_the_whole_run_never_stop_the_others(tmp_path: Path) -> None:
    async def scenario() -> None:
        # Room for two; three held by tasks for the whole run, over the ceiling too.
        capacity = HostCapacity(host(tmp_path, total=16, available=3.5), ceiling=1, poll_s=0.01)
        for _ in range(3):
            capacity.hold(GIB)
        await asyncio.wait_for(capacity.acquire(GIB), 5)  # one at a time still goes
        second = asyncio.ensure_future(capacity.acquire(GIB))
        assert await waits(second)
        capacity.release(GIB)
        await asyncio.wait_for(second, 5)
        capacity.release(GIB)
        for _ in range(3):
            capacity.release(GIB, held=True)
        assert capacity.live == 0 and capacity.try_acquire(GIB)

    asyncio.run(scenario())


def test_a_start_waits_while_memory_is_short_and_goes_when_it_frees(tmp_path: Path) -> None:
    async def scenario() -> None:
        capacity = HostCapacity(host(tmp_path, total=16, available=2.5), poll_s=0.01)
        await capacity.acquire(GIB)
        second = asyncio.ensure_future(capacity.acquire(GIB))
        assert await waits(second)  # 1 + 1 GiB > 2.5 - 1 GiB reserve
        assert capacity.snapshot().waiting == 1
        meminfo(tmp_path, total=16, available=8)  # another program freed memory
        await asyncio.wait_for(second, 5)
        assert capacity.live == 2

    asyncio.run(scenario())


def test_a_start_waits_while_others_take_memory(tmp_path: Path) -> None:
    async def scenario() -> None:
        capacity = HostCapacity(host(tmp_path, total=16, available=10), poll_s=0.01)
        await capacity.acquire(GIB)
        meminfo(tmp_path, total=16, available=1.5)  # something else took memory meanwhile
        second = asyncio.ensure_future(capacity.acquire(GIB))
        assert await waits(second)
        capacity.release(GIB)  # ours gone: nothing of ours alive, one may start
        await asyncio.wait_for(second, 5)

    asyncio.run(scenario())


def test_a_warm_start_never_takes_the_place_a_waiting_start_needs(tmp_path: Path) -> None:
    async def scenario() -> None:
        capacity = HostCapacity(host(tmp_path), ceiling=2)
        assert take(capacity, 2) == 2
        waiter = asyncio.ensure_future(capacity.acquire(GIB))
        assert await waits(waiter)
        capacity.release(GIB)
        assert not capacity.try_acquire(GIB)  # the start that waits comes first
        await asyncio.wait_for(waiter, 5)
        assert capacity.live == 2

    asyncio.run(scenario())


def test_a_resource_error_halves_the_limit_and_successes_bring_it_back(tmp_path: Path) -> None:
    capacity = HostCapacity(host(tmp_path, available=12.5))  # memory: 11 places
    assert take(capacity, 8) == 8
    assert not capacity.failed(SandboxError("creating a container: image not found"))
    assert capacity.snapshot().reason != "engine errors"  # not the host's want
    oom = SandboxError("starting a container: fork/exec: cannot allocate memory")
    assert capacity.failed(oom)
    now = capacity.snapshot()
    assert (now.limit, now.reason) == (4, "engine errors")
    # The other starts that failed together, begun before it: one decrease, not three.
    assert capacity.failed(oom) and capacity.failed(oom)
    assert capacity.snapshot().limit == 4 and capacity.decreases == 1
    for _ in range(8):
        capacity.release(GIB)
    assert take(capacity, 10) == 4
    for _ in range(4):  # a full round of successes adds one place
        capacity.succeeded()
    assert capacity.snapshot().limit == 5
    assert take(capacity, 10) == 1
    # Rounds of successes until another limit binds; the engine's is then dropped.
    for _ in range(200):
        capacity.succeeded()
    assert capacity.snapshot().reason == "memory"
    assert capacity.decreases == 1


@pytest.mark.parametrize(
    ("error", "resource"),
    [
        (SandboxError("Error response from daemon: cannot allocate memory"), True),
        (SandboxError("container exited: OOMKilled"), True),
        (OSError(28, "No space left on device"), True),
        (SandboxError("bash: fork: retry: Resource temporarily unavailable"), True),
        (MemoryError(), True),
        (SandboxError("No such image: gem-eval/base:bookworm"), False),
        (SandboxError("the room is full of zoom calls"), False),
        (ConnectionError("engine down"), False),
    ],
)
def test_which_errors_mean_the_host_ran_short(error: BaseException, resource: bool) -> None:
    assert is_resource_error(error) is resource


def test_a_cause_is_read_too() -> None:
    try:
        try:
            raise OSError(12, "Cannot allocate memory")
        except OSError as exc:
            raise SandboxError("starting the sandbox failed") from exc
    except SandboxError as outer:
        assert is_resource_error(outer)


@pytest.mark.parametrize("by", ["ceiling", "memory"])
def test_never_more_alive_than_the_limit_under_many_acquirers(tmp_path: Path, by: str) -> None:
    async def scenario() -> None:
        if by == "ceiling":
            capacity = HostCapacity(host(tmp_path), ceiling=3)
        else:  # 16 GiB machine, 4.2 GiB free: three 1 GiB sandboxes
            capacity = HostCapacity(host(tmp_path, total=16, available=4.2), poll_s=0.01)
        alive, most = 0, 0
        rng = random.Random(7)

        async def one() -> None:
            nonlocal alive, most
            await capacity.acquire(GIB)
            alive += 1
            most = max(most, alive, capacity.live)
            await asyncio.sleep(rng.random() * 0.01)
            alive -= 1
            capacity.release(GIB)

        await asyncio.wait_for(asyncio.gather(*(one() for _ in range(40))), 30)
        assert most == 3 and capacity.peak == 3 and capacity.live == 0

    asyncio.run(scenario())


def test_a_listener_hears_the_limit_and_the_live_count(tmp_path: Path) -> None:
    heard: list[str] = []
    capacity = HostCapacity(host(tmp_path), ceiling=2)
    capacity.subscribe(lambda snapshot: heard.append(str(snapshot)))
    take(capacity, 2)
    capacity.release(GIB)
    assert heard == [
        "sandboxes 1/2 (max_sandboxes)",
        "sandboxes 2/2 (max_sandboxes)",
        "sandboxes 1/2 (max_sandboxes)",
    ]


def test_a_sandboxs_footprint_counts_its_sidecars() -> None:
    spec = SandboxSpec(
        memory="1g",
        cpus=2,
        sidecars=[
            SidecarSpec(name="db", image="db:1", memory="256m"),
            SidecarSpec(name="web", image="web:1", memory="4g", cpus=0.5),
        ],
    )
    # Each sidecar at its own limit, never above the container's.
    assert footprint(spec) == (GIB + GIB // 4 + GIB, 2 + 2 + 0.5)


# -- a pool held to it -------------------------------------------------------------------


def test_a_warm_pool_keeps_no_more_alive_than_the_host_holds(tmp_path: Path) -> None:
    async def scenario() -> None:
        capacity = HostCapacity(host(tmp_path), ceiling=2)
        pool = SandboxPool(FakeSandbox, warm=4, capacity=capacity, memory=GIB)
        held = [await pool.acquire(), await pool.acquire()]
        await settle()
        assert len(open_ones()) == 2  # no warm ones beyond the two places
        third = asyncio.ensure_future(pool.acquire())
        assert await waits(third)
        await pool.release(held[0])
        sandbox = await asyncio.wait_for(third, 5)  # started once a place was given back
        await settle()
        assert len(open_ones()) == 2 and isinstance(sandbox, FakeSandbox) and sandbox.started
        await pool.release(held[1])
        await pool.release(sandbox)
        await pool.aclose()
        assert open_ones() == [] and capacity.live == 0

    asyncio.run(scenario())


def test_a_start_that_fails_gives_its_place_back_and_tells_the_capacity(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        capacity = HostCapacity(host(tmp_path))
        full = SandboxError("cannot allocate memory")
        pool = SandboxPool(lambda: FakeSandbox(fail=full), warm=0, capacity=capacity, memory=GIB)
        with pytest.raises(SandboxError):
            await pool.acquire()
        assert capacity.live == 0 and capacity.decreases == 1
        await pool.aclose()

    asyncio.run(scenario())


def test_another_pools_idle_warm_sandboxes_make_room(tmp_path: Path) -> None:
    async def scenario() -> None:
        capacity = HostCapacity(host(tmp_path), ceiling=3)
        idle = SandboxPool(FakeSandbox, warm=2, capacity=capacity, memory=GIB)
        used = await idle.acquire()
        await settle()
        assert capacity.live == 3  # one in use, two warm ones: every place
        busy = SandboxPool(FakeSandbox, warm=0, capacity=capacity, memory=GIB)
        sandbox = await asyncio.wait_for(busy.acquire(), 5)  # one warm one was removed
        assert (
            isinstance(sandbox, FakeSandbox)
            and sandbox.started
            and capacity.live == 3
            and len(open_ones()) == 3
        )
        await busy.release(sandbox)
        await idle.release(used)
        await busy.aclose()
        await idle.aclose()
        assert open_ones() == [] and capacity.live == 0

    asyncio.run(scenario())


# -- a run's Provisioner held to it, with real bubblewrap sandboxes ----------------------


def most_alive_on_a_small_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: type[Any], spec: SandboxSpec
) -> tuple[int, dict[str, Any]]:
    """Six episodes at once through a Provisioner on a fake 4 GiB machine (0.4 GiB
    reserve) with 2.5 GiB free: the most sandboxes of ``kind`` alive at once (counted from
    the start of each to the end of its removal) and the manifest's capacity."""
    from gem_eval.records import TaskSpec
    from gem_eval.runner.provision import Provisioner

    alive: set[int] = set()
    most = 0
    start, close = kind.start, kind.close

    async def counted_start(self: Any) -> None:
        nonlocal most
        alive.add(id(self))  # alive from its start: it may take memory from then on
        most = max(most, len(alive))
        await start(self)

    async def counted_close(self: Any) -> None:
        await close(self)
        alive.discard(id(self))

    monkeypatch.setattr(kind, "start", counted_start)
    monkeypatch.setattr(kind, "close", counted_close)
    capacity = HostCapacity(host(tmp_path, total=4, available=2.5, cores=2), poll_s=0.01)
    provisioner = Provisioner(f"test-capacity-{uuid.uuid4().hex[:8]}", capacity=capacity)
    task = TaskSpec(id="t", env_id="none", sandbox=spec)

    async def episode() -> str:
        async with provisioner.episode(task) as (_, sandbox):
            assert sandbox is not None
            result = await sandbox.exec(["sh", "-c", "sleep 0.05; echo ok"])
            return result.stdout.strip()

    async def scenario() -> list[str]:
        try:
            return await asyncio.wait_for(asyncio.gather(*(episode() for _ in range(6))), 120)
        finally:
            await provisioner.aclose()

    assert asyncio.run(scenario()) == ["ok"] * 6
    assert not alive
    return most, provisioner.describe()["capacity"]


def test_the_provisioner_keeps_to_a_limit_from_a_small_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gem_eval.sandbox.local import LocalSandbox

    # Two 1 GiB sandboxes fit, though the local kind's default would keep eight in use
    # and as many warm.
    spec = SandboxSpec(type="local", memory="1g")
    most, described = most_alive_on_a_small_host(tmp_path, monkeypatch, LocalSandbox, spec)
    assert most == 2
    assert (described["limit"], described["reason"], described["peak_live"]) == (2, "memory", 2)


@pytest.mark.docker
def test_the_provisioner_keeps_containers_to_a_limit_from_a_small_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gem_eval.sandbox.docker import DockerSandbox

    spec = SandboxSpec(type="docker", memory="1g")  # Docker's default: four in use, four warm
    most, described = most_alive_on_a_small_host(tmp_path, monkeypatch, DockerSandbox, spec)
    assert most == 2
    assert (described["limit"], described["reason"], described["peak_live"]) == (2, "memory", 2)


def test_sandboxes_shared_by_a_task_never_wait_for_a_place(tmp_path: Path) -> None:
    from gem_eval.records import TaskSpec
    from gem_eval.runner.provision import Provisioner

    # Room for two, three tasks each with a sandbox for the whole run: waiting for a
    # place would wait for ever (they give theirs back only at the end).
    capacity = HostCapacity(host(tmp_path, total=4, available=2.5, cores=2))
    provisioner = Provisioner(capacity=capacity)
    spec = SandboxSpec(type="local", memory="1g", per="task")
    tasks = [TaskSpec(id=f"t{i}", env_id="none", sandbox=spec) for i in range(3)]

    async def episode(task: TaskSpec) -> None:
        async with provisioner.episode(task) as (_, sandbox):
            assert sandbox is not None and (await sandbox.exec(["true"])).exit_code == 0

    async def scenario() -> int:
        try:
            await asyncio.wait_for(asyncio.gather(*(episode(t) for t in tasks)), 30)
            return capacity.live
        finally:
            await provisioner.aclose()

    assert asyncio.run(scenario()) == 3  # counted, so pooled sandboxes make room for them
    assert capacity.live == 0
