"""``SandboxPool``: sandboxes started ahead of need, handed out once, removed after use.

Starting a container costs ~0.3 s and removing one ~0.1 s; an episode that needs a fresh
sandbox should pay neither. The pool keeps up to ``warm`` started sandboxes ready while
episodes run, hands each out exactly once (:meth:`acquire`), and removes returned ones
in the background (:meth:`release`). :meth:`aclose` stops the refills and removes
everything the pool still holds, waiting for removals in flight, so nothing outlives it.

While the Docker engine is away (a daemon restart), a Docker sandbox's start waits for
it (bounded, see :func:`gem_eval.sandbox.engine.gate`), a start that its going away
broke is tried again once it is back, and a ready sandbox started before it went away
(its container died with the daemon) is dropped rather than handed out.

With a :class:`~gem_eval.sandbox.capacity.HostCapacity`, every start (a warm one too) takes
a place there first and gives it back once the sandbox is removed: a start that is
needed waits for a place, a warm start ahead of need is made only when a place is free,
and a warm sandbox nobody has taken yet is removed when another start waits for its place.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeGuard

from gem_eval.sandbox import engine
from gem_eval.sandbox.base import Sandbox

if TYPE_CHECKING:
    from gem_eval.sandbox.capacity import HostCapacity
    from gem_eval.sandbox.docker import DockerSandbox

_ENGINE_RETRIES = 3
"""Starts retried after the engine went away during them (a flapping daemon ends it)."""


class SandboxPool:
    """A pool of fresh sandboxes made by ``factory``.

    Args:
        factory: Makes an unstarted sandbox.
        warm: How many started sandboxes to keep ready (the episode concurrency is a
            good value; 0 makes ``acquire`` start one on demand).
        capacity: The host's places for sandboxes, taken by each start (``None``: no gate).
        memory: A sandbox's declared memory in bytes, as ``capacity`` counts it.
        cpus: A sandbox's declared CPUs, as ``capacity`` counts them.
    """

    def __init__(
        self,
        factory: Callable[[], Sandbox],
        warm: int,
        *,
        capacity: HostCapacity | None = None,
        memory: int = 0,
        cpus: float = 1.0,
    ) -> None:
        self.factory = factory
        self.warm = max(0, warm)
        self.capacity, self.memory, self.cpus = capacity, memory, cpus
        # A ready sandbox with the engine's outage count when it started.
        self._ready: asyncio.Queue[tuple[Sandbox, int] | BaseException] = asyncio.Queue()
        self._starting = 0
        self._waiting = 0  # acquirers waiting for a ready one
        self._placed: dict[int, Sandbox] = {}  # started sandboxes holding a place
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False
        if capacity is not None:
            capacity.on_short(self._shed_idle)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _refill(self) -> None:
        while not self._closed and self._ready.qsize() + self._starting < self.warm:
            if self.capacity is not None and not self.capacity.try_acquire(self.memory, self.cpus):
                return  # ahead of need only while the host has room to spare
            self._starting += 1
            self._spawn(self._start_one())

    async def _start_one(self) -> None:
        try:
            sandbox, outages = await self._start_placed()
        except BaseException as exc:  # handed to the next acquire, which raises it
            self._starting -= 1
            if not isinstance(exc, asyncio.CancelledError):
                self._ready.put_nowait(exc)
            return
        self._starting -= 1
        if self._closed:
            await self._close(sandbox)
        else:
            self._ready.put_nowait((sandbox, outages))

    async def _start_placed(self) -> tuple[Sandbox, int]:
        """:func:`_started` by a start holding its place (given back if it fails)."""
        if self.capacity is None:
            return await _started(self.factory)
        started = _started(self.factory)
        sandbox, outages = await self.capacity.started(started, self.memory, self.cpus)
        self._placed[id(sandbox)] = sandbox
        return sandbox, outages

    async def acquire(self) -> Sandbox:
        """A started sandbox nobody else has had; raises what starting one raised."""
        if self._closed:
            raise RuntimeError("the sandbox pool is closed")
        while True:
            self._refill()
            if self._ready.empty() and self._starting <= self._waiting:
                # Nothing on its way for this caller: start one for it (waiting for a place).
                if self.capacity is not None:
                    await self.capacity.acquire(self.memory, self.cpus)
                sandbox, _ = await self._start_placed()
                return sandbox
            self._waiting += 1
            try:
                item = await self._ready.get()
            finally:
                self._waiting -= 1
            self._refill()
            if isinstance(item, BaseException):
                raise item
            sandbox, outages = item
            if not _uses_engine(sandbox) or await _still_running(sandbox, outages):
                return sandbox
            self._spawn(self._close(sandbox))  # e.g. its container died with the engine

    async def release(self, sandbox: Sandbox) -> None:
        """Remove a used sandbox, in the background."""
        self._spawn(self._close(sandbox))
        await asyncio.sleep(0)

    async def aclose(self) -> None:
        """Remove every sandbox the pool holds or is starting; wait for removals."""
        self._closed = True
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        while not self._ready.empty():
            item = self._ready.get_nowait()
            if isinstance(item, tuple):
                await self._close(item[0])

    async def _close(self, sandbox: Sandbox) -> None:
        """Remove ``sandbox``, then give its place back."""
        try:
            await _quiet_close(sandbox)
        finally:
            if self._placed.pop(id(sandbox), None) is not None and self.capacity is not None:
                self.capacity.release(self.memory, self.cpus)

    def _shed_idle(self) -> bool:
        """Remove a ready sandbox nobody waits for (another start needs its place)."""
        if self._closed or self._ready.qsize() <= self._waiting:
            return False
        item = self._ready.get_nowait()
        if isinstance(item, BaseException):  # a failure still to report: keep it
            self._ready.put_nowait(item)
            return False
        self._spawn(self._close(item[0]))
        return True


async def _started(factory: Callable[[], Sandbox]) -> tuple[Sandbox, int]:
    """A started sandbox from ``factory`` and the engine's outage count before it
    started. A Docker start waits while the engine is away, and one that the engine's
    going away broke is tried again."""
    attempt = 0
    while True:
        sandbox = factory()
        docker = _uses_engine(sandbox)
        if docker:
            await engine.gate()
        outages = engine.outages()
        try:
            await sandbox.start()
        except Exception:
            await _quiet_close(sandbox)
            lost = docker and (engine.is_down() or engine.outages() != outages)
            attempt += 1
            if lost and attempt <= _ENGINE_RETRIES:
                continue
            raise
        except BaseException:
            await _quiet_close(sandbox)
            raise
        return sandbox, outages


async def _still_running(sandbox: DockerSandbox, outages: int) -> bool:
    """Whether a ready Docker sandbox's container outlived the time it sat ready (a
    daemon that stops kills it, and may answer for a while as it does)."""
    from gem_eval.sandbox import docker_client

    if engine.outages() != outages or sandbox.id is None:
        return False
    return await docker_client.container_running(sandbox.id)


def _uses_engine(sandbox: Sandbox) -> TypeGuard[DockerSandbox]:
    """Whether ``sandbox`` lives in the Docker engine (others do not wait for it)."""
    from gem_eval.sandbox.docker import DockerSandbox

    return isinstance(sandbox, DockerSandbox)


async def _quiet_close(sandbox: Sandbox) -> None:
    with contextlib.suppress(Exception):
        await asyncio.shield(sandbox.close())
