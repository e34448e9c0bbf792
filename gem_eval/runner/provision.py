"""``Provisioner``: the sandboxes and tools each episode of a run gets.

For every task it builds the tool kits its ``tools:`` list (settings checked before the
run) and, when a tool or the task needs one, a sandbox: fresh per episode from a warm
:class:`~gem_eval.sandbox.pool.SandboxPool` (one pool per distinct ``sandbox:``
setting, at most ``max_sandboxes`` in use), or one per task. ``aclose`` removes every
sandbox and stops every shared tool server, on success, error and Ctrl-C alike.

Every sandbox it starts takes a place in the run's
:class:`~gem_eval.sandbox.capacity.HostCapacity` first, so the sandboxes alive at once
fit the host's free memory and CPUs (and the engine's errors), at most the sandboxes'
``max_sandboxes`` when they all set one.

A hosted env's task (terminal, MCP) brings its own sandbox; the suite's ``sandbox:`` and
``--no-network`` may only tighten it (:mod:`gem_eval.sandbox.policy`). Before the first
episode, :meth:`Provisioner.prepare` checks every task against that policy and builds
each image the tasks need, once: a conflict or a broken Dockerfile stops the run with
one line instead of failing every episode of the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from gem_eval.envs.hosted import EpisodeResources, HostedEnv
from gem_eval.errors import UserError
from gem_eval.phases import phase, remainder
from gem_eval.records import SandboxSpec, TaskSpec, ToolSpec
from gem_eval.sandbox.base import Sandbox
from gem_eval.sandbox.capacity import HostCapacity, footprint
from gem_eval.sandbox.factory import check_available, make_sandbox, needs_resolving, resolve_image
from gem_eval.sandbox.policy import PolicyConflict, SandboxPolicy, describe_policy
from gem_eval.sandbox.pool import SandboxPool
from gem_eval.tools.base import Tool
from gem_eval.tools.kit import ToolKit, build_kit

RUN_WIDE_KEYS = frozenset({"max_sandboxes", "output_limit", "image_map"})
"""``sandbox:`` keys a suite sets for a hosted env's sandbox as they are (not a policy)."""


class Provisioner:
    """Sandboxes and tools for the episodes of one run.

    Args:
        run_id: Labels the run's containers.
        sandbox_type: Overrides every task's sandbox type (``--sandbox``).
        image_map: Base images substituted in every build (``--image-map``).
        no_network: Turn the network off in every sandbox (``--no-network``).
        log: Hears a line for each image built (the CLI prints it).
        capacity: The host's places for sandboxes (default: sized to this machine).
    """

    def __init__(
        self,
        run_id: str | None = None,
        sandbox_type: str | None = None,
        image_map: dict[str, str] | None = None,
        *,
        no_network: bool = False,
        log: Callable[[str], None] | None = None,
        capacity: HostCapacity | None = None,
    ) -> None:
        self.run_id = run_id
        self.sandbox_type = sandbox_type
        self.image_map = dict(image_map or {})
        self.no_network = no_network
        self.log: Callable[[str], None] = log or (lambda _: None)
        self.capacity = capacity or HostCapacity()
        self._hosted_limit: asyncio.Semaphore | None = None
        self._pools: dict[str, tuple[SandboxPool, asyncio.Semaphore]] = {}
        self._task_sandboxes: dict[str, Sandbox] = {}
        self._task_locks: dict[str, asyncio.Lock] = {}
        self._footprints: dict[str, tuple[int, float]] = {}
        self._kits: dict[str, ToolKit] = {}
        self._built: dict[str, SandboxSpec | UserError] = {}
        self._described: dict[str, Any] = {"sandboxes": {}, "tools": {}, "policy": {}}

    def kit(self, spec: ToolSpec) -> ToolKit:
        """The run's kit for a ``tools:`` entry (built once; bad settings raise here)."""
        key = spec.model_dump_json()
        if key not in self._kits:
            self._kits[key] = build_kit(spec.name, spec.settings)
        return self._kits[key]

    def sandbox_spec(self, task: TaskSpec) -> SandboxSpec | None:
        """The sandbox ``task`` gets: its own setting, a default Docker one when a tool
        or the env needs a sandbox, ``None`` when nothing does; with the run's policy
        (``--no-network``) applied and its image built."""
        planned = self._planned(task, None)
        return None if planned is None else self._resolved(planned[1])

    def hosted_spec(self, task: TaskSpec, resources: EpisodeResources) -> SandboxSpec:
        """The sandbox a hosted env asks for, with the task's run-wide settings
        (``max_sandboxes``, ``output_limit``, ``image_map``), tightened by the suite's
        ``sandbox:`` policy and ``--no-network`` (recorded for the manifest), its image
        built.

        Raises:
            PolicyConflict: The task cannot work under the policy.
        """
        spec = self._spec(task, resources)
        assert spec is not None  # a hosted env always asks for a sandbox
        return self._resolved(spec)

    def _planned(
        self, task: TaskSpec, resources: EpisodeResources | None
    ) -> tuple[SandboxSpec, SandboxSpec] | None:
        """The sandbox ``task`` asks for and the one the run's policy gives it (its image
        not built yet); ``None`` when it needs no sandbox."""
        if resources is None:
            asked = self._asked(task)
            if asked is None:
                return None
            # An ordinary task's ``sandbox:`` is its sandbox: only the run adds a policy.
            policy = SandboxPolicy.of(None, no_network=self.no_network)
        else:
            asked = resources.sandbox
            if task.sandbox is not None:
                keep = RUN_WIDE_KEYS & task.sandbox.model_fields_set
                asked = asked.model_copy(update={k: getattr(task.sandbox, k) for k in keep})
            policy = SandboxPolicy.of(task.sandbox, no_network=self.no_network)
        needs_network = resources is not None and resources.needs_network
        try:
            return asked, policy.apply(asked, needs_network=needs_network)
        except PolicyConflict as exc:
            raise PolicyConflict(f"task {task.id!r} {exc}") from None

    def _asked(self, task: TaskSpec) -> SandboxSpec | None:
        spec = task.sandbox
        needs = env_needs_sandbox(task.env_id) or any(self.kit(t).needs_sandbox for t in task.tools)
        if spec is None and not needs:
            return None
        spec = spec or SandboxSpec()
        if self.sandbox_type is not None:
            kind, _, flavour = self.sandbox_type.partition("-")
            spec = spec.model_copy(update={"type": kind, "unsafe": flavour == "unsafe"})
        return None if spec.type == "none" else spec

    def _spec(self, task: TaskSpec, resources: EpisodeResources | None) -> SandboxSpec | None:
        """:meth:`_planned`'s sandbox (not built), its policy recorded for the manifest."""
        planned = self._planned(task, resources)
        if planned is None:
            return None
        self._described["policy"][task.id] = describe_policy(*planned)
        return planned[1]

    def _resolved(self, spec: SandboxSpec, log: Callable[[str], None] | None = None) -> SandboxSpec:
        """``spec`` with its image built (once per run, and cached by content). A build
        that fails as the task's fault (a broken Dockerfile, a base image missing) is not
        tried again in this run: every later ask gets the same error."""
        spec = spec.model_copy(update={"image_map": {**spec.image_map, **self.image_map}})
        if not needs_resolving(spec):  # nothing to build (the sidecars' images included)
            return spec
        key = spec.model_dump_json()
        if key not in self._built:
            try:
                self._built[key] = resolve_image(spec, log or self.log)
            except UserError as exc:
                self._built[key] = exc
        built = self._built[key]
        if isinstance(built, UserError):
            raise built
        return built

    def check(self, tasks: list[TaskSpec]) -> None:
        """Raise ``UserError`` before the run for tools or sandboxes that cannot work.
        Images still to build are checked by :meth:`prepare`, which builds them."""
        for task in tasks:
            planned = self._planned(task, None)  # builds every kit of the task
            if planned is None:
                continue
            spec = planned[1].model_copy(
                update={"image_map": {**planned[1].image_map, **self.image_map}}
            )
            if not needs_resolving(spec):
                check_available(spec)

    async def prepare(self, tasks: list[TaskSpec]) -> None:
        """Before the first episode: check every task against the run's sandbox policy,
        then build each image the tasks need (once; a line to ``log`` per build).

        A task whose env cannot be made is left to its episodes (``config_error`` when
        it refuses its arguments, else ``env_error``).

        Raises:
            UserError: One line: a task the policy refuses, or an image that does not
                build (naming the task, the image and the build's last lines).
        """
        await asyncio.to_thread(self._prepare, tasks)

    def _prepare(self, tasks: list[TaskSpec]) -> None:
        planned: dict[str, tuple[TaskSpec, SandboxSpec]] = {}
        for task in tasks:  # every policy first: a conflict is found before a long build
            resources = None
            if env_is_hosted(task.env_id):
                resources = _resources(task)
                if resources is None:
                    continue
            spec = self._spec(task, resources)
            if spec is not None:
                planned.setdefault(_key(spec), (task, spec))
        for task, spec in planned.values():
            log = functools.partial(_prefixed, self.log, task.id)
            try:
                check_available(self._resolved(spec, log))
            except UserError as exc:
                raise UserError(f"task {task.id!r}: {exc}") from None

    @contextlib.asynccontextmanager
    async def episode(
        self,
        task: TaskSpec,
        resources: EpisodeResources | None = None,
        setup: Callable[[Sandbox], Awaitable[None]] | None = None,
    ) -> AsyncIterator[tuple[list[Tool], Sandbox | None]]:
        """The tools and sandbox of one episode; released when the block exits.

        Args:
            task: The task (its ``tools:`` and ``sandbox:``).
            resources: What a hosted env asks for (its own sandbox and tools).
            setup: Called with the started sandbox before the tools open.
        """
        tool_specs = [*task.tools, *(resources.tools if resources else ())]
        spec = await asyncio.to_thread(self._episode_spec, task, resources)
        sandbox: Sandbox | None = None
        pool: tuple[SandboxPool, asyncio.Semaphore] | None = None
        opened: list[tuple[ToolKit, list[Tool]]] = []
        try:
            if spec is not None and spec.per == "task":
                with phase("sandbox_start"):
                    sandbox = await self._task_sandbox(task.id, spec)
            elif spec is not None:
                pool = self._pool(spec, hosted=resources is not None)
                with phase("sandbox_wait"):
                    await pool[1].acquire()
                try:
                    with phase("sandbox_start"):
                        sandbox = await pool[0].acquire()
                except BaseException:
                    pool[1].release()
                    pool = None
                    raise
                self._described["sandboxes"][_key(spec)] = sandbox.describe()
            with remainder("setup"):
                if setup is not None and sandbox is not None:
                    await setup(sandbox)
                for tool_spec in tool_specs:
                    kit = self.kit(tool_spec)
                    opened.append((kit, await kit.open(sandbox if kit.needs_sandbox else None)))
                    self._describe_tool(tool_spec.name, kit.describe())
            if resources is not None and resources.service:
                self._described.setdefault("services", {}).update(resources.service)
            yield [tool for _, tools in opened for tool in tools], sandbox
        finally:
            with phase("teardown"):
                await asyncio.shield(self._release(opened, sandbox, pool))

    def _episode_spec(
        self, task: TaskSpec, resources: EpisodeResources | None
    ) -> SandboxSpec | None:
        spec = self._spec(task, resources)
        return None if spec is None else self._resolved(spec)

    async def _release(
        self,
        opened: list[tuple[ToolKit, list[Tool]]],
        sandbox: Sandbox | None,
        pool: tuple[SandboxPool, asyncio.Semaphore] | None,
    ) -> None:
        for kit, tools in opened:
            with contextlib.suppress(Exception):
                await kit.release(tools)
        if pool is not None:
            if sandbox is not None:
                await pool[0].release(sandbox)
            pool[1].release()

    def _pool(
        self, spec: SandboxSpec, hosted: bool = False
    ) -> tuple[SandboxPool, asyncio.Semaphore]:
        """The pool of ``spec``'s sandboxes. A hosted env's specs (one image per task,
        often one episode each) start on demand and share one limit, so a suite of many
        tasks does not warm a container per task."""
        key = _key(spec)
        if key not in self._pools:
            limit = spec.max_sandboxes or _default_concurrency(spec)
            factory = lambda: make_sandbox(spec, self.run_id)  # noqa: E731
            memory, cpus = footprint(spec)
            new_pool = functools.partial(
                SandboxPool, factory, capacity=self.capacity, memory=memory, cpus=cpus
            )
            if hosted:
                if self._hosted_limit is None:
                    self._hosted_limit = asyncio.Semaphore(limit)
                    self.capacity.set_ceiling("hosted", spec.max_sandboxes)
                self._pools[key] = (new_pool(warm=0), self._hosted_limit)
            else:
                self.capacity.set_ceiling(key, spec.max_sandboxes)
                self._pools[key] = (new_pool(warm=limit), asyncio.Semaphore(limit))
        return self._pools[key]

    async def _task_sandbox(self, task_id: str, spec: SandboxSpec) -> Sandbox:
        lock = self._task_locks.setdefault(task_id, asyncio.Lock())
        async with lock:
            if task_id not in self._task_sandboxes:
                memory, cpus = footprint(spec)
                self.capacity.hold(memory, cpus)  # given back by aclose
                sandbox = make_sandbox(spec, self.run_id)
                await self.capacity.started(sandbox.__aenter__(), memory, cpus, held=True)
                self._task_sandboxes[task_id] = sandbox
                self._footprints[task_id] = (memory, cpus)
                self._described["sandboxes"][_key(spec)] = sandbox.describe()
            return self._task_sandboxes[task_id]

    def _describe_tool(self, name: str, description: Any) -> None:
        """Record a kit; kits of one name but other settings (two MCP services) get
        ``name#2``, ``name#3`` ..."""
        tools = self._described["tools"]
        key, n = name, 1
        while key in tools and tools[key] != description:
            n += 1
            key = f"{name}#{n}"
        tools[key] = description

    def describe(self) -> dict[str, Any]:
        """Sandboxes and tool kits used so far, and the host's places for sandboxes
        when any started (for the run manifest)."""
        described = {k: dict(v) for k, v in self._described.items() if v}
        if self.capacity.peak:
            described["capacity"] = self.capacity.describe()
        return described

    async def aclose(self) -> None:
        """Close the kits, task sandboxes and pools; nothing survives this."""
        for kit in self._kits.values():
            with contextlib.suppress(Exception):
                await kit.aclose()
        self._kits.clear()
        for task_id, sandbox in self._task_sandboxes.items():
            with contextlib.suppress(Exception):
                await sandbox.close()
            self.capacity.release(*self._footprints.pop(task_id), held=True)
        self._task_sandboxes.clear()
        for pool, _ in self._pools.values():
            await pool.aclose()
        self._pools.clear()
        if self.run_id is not None:
            from gem_eval.sandbox import cleanup

            # What the engine still holds of the run (removals that failed while it was
            # away, say); waits a while for an absent engine.
            await cleanup.remove_run(self.run_id)


def env_needs_sandbox(env_id: str) -> bool:
    """Whether the env registered as ``env_id`` grades in a sandbox (a code env)."""
    from gem_eval.errors import RegistrationError, UnknownEnvError
    from gem_eval.registration import spec

    try:
        factory = spec(env_id).load()
    except (RegistrationError, UnknownEnvError):  # reported when the env is made
        return False
    return bool(getattr(factory, "needs_sandbox", False))


def env_is_hosted(env_id: str) -> bool:
    """Whether the env registered as ``env_id`` brings its own sandbox (a
    :class:`~gem_eval.envs.hosted.HostedEnv`: terminal, MCP)."""
    from gem_eval.errors import RegistrationError, UnknownEnvError
    from gem_eval.registration import spec

    try:
        factory = spec(env_id).load()
    except (RegistrationError, UnknownEnvError):  # reported when the env is made
        return False
    return isinstance(factory, type) and issubclass(factory, HostedEnv)


def _resources(task: TaskSpec) -> EpisodeResources | None:
    """What a hosted task's episodes run in; ``None`` when its env cannot be made or
    say (its episodes report that, each as it would anyway)."""
    from gem_eval.registration import make

    try:
        env = make(task.env_id, **task.env_kwargs)
    except Exception:
        return None
    try:
        hosted = env.unwrapped
        return hosted.resources() if isinstance(hosted, HostedEnv) else None
    except Exception:
        return None
    finally:
        env.close()


def _prefixed(log: Callable[[str], None], task_id: str, line: str) -> None:
    log(f"{task_id}: {line}")


def _key(spec: SandboxSpec) -> str:
    return spec.model_dump_json(exclude={"per"})


def _default_concurrency(spec: SandboxSpec) -> int:
    if spec.type == "docker":
        from gem_eval.sandbox.docker import DockerSandbox

        return DockerSandbox.default_concurrency
    from gem_eval.sandbox.local import LocalSandbox

    return LocalSandbox.default_concurrency
