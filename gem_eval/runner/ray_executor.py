"""``RayExecutor``: one run's episodes played across the nodes of a Ray cluster.

Design: **one actor per node**, each owning that node's
:class:`~gem_eval.runner.executor.LocalExecutor` (its model clients, its
:class:`~gem_eval.runner.provision.Provisioner` with the warm sandbox pools, the node's
Docker engine and image cache). Episodes are not Ray tasks of their own: a sandbox pool,
a model's connection pool and its adaptive limit are per-process state that a task would
have to rebuild for every episode (a container start, a TCP handshake, a cold limit), and
an image built on a node is only useful to episodes that run there. An async actor plays
many episodes at once on its event loop, exactly as the local executor does.

The driver keeps everything else: the :class:`~gem_eval.runner.runner.Runner` (global
``--concurrency``, ``--max-cost`` counted on the records as they come back), and the run
directory, which only it writes. Records stream back as episodes finish, so resume,
leaderboards and the gate read a run made on Ray as any other.

Limits: a model's connection limit (``--max-connections``, else ``--concurrency``) is
split into per-node shares (``total // nodes``, at least 1), so the cluster never holds
more calls in flight than the cap when the cap is at least the number of nodes; each
node's share backs off on the 429s it sees (:class:`~gem_eval.models.concurrency.AdaptiveLimit`).

Faults: a node is lost when it (or its actor) dies, when its Docker engine goes away
(:class:`~gem_eval.runner.node_worker.EngineLostError`), or when it fails the run's
set-up while another node passes it (:meth:`RayExecutor._each`). A lost node gets no more
episodes; its episodes in flight are cancelled there and each is played again at once,
from its start, on the least busy node left (the calls they made on the lost node are
not replayed: nothing of them came back). Only when no node is left is an episode
recorded as ``infra_error`` (replayed by ``--resume``). A node whose engine went away
still closes: it removes its containers of the run once the engine is back, or its
warning names the cleanup command to run there, shown by the driver. The driver's
SIGKILL leaves the run as today's does (every finished record is on disk); Ray then
kills the run's actors with it.

Images: every node builds the run's task images on its own engine before the first
episode (Docker's image store is per engine; a build from the task's files is cached by
content, so a node builds each once, in parallel with the other nodes), so that any
node can play any episode, and a lost node's episodes start elsewhere at once, with no
build in their way. No registry is needed. Base images that need the internet to build
(``gem-eval sandbox build-base``, the terminal tasks' base) are made on every node
before the run, as on one machine. The integrity
audit of a terminal episode runs in its own sandbox, on the node that plays it, and
probes each image once per node (the probe is cached by image id).

``ray`` is imported only when a :class:`RayExecutor` starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from gem_eval.errors import GemEvalError, UserError
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.runner.executor import Executor
from gem_eval.runner.node_worker import EngineLostError, NodeWorker
from gem_eval.runner.scoring import failed_record

INSTALL_HINT = "the Ray executor needs ray: pip install 'gem-eval[ray]'"


class NoNodesLeftError(GemEvalError):
    """Every node of the cluster was lost during the run."""


class _NodeLost(Exception):
    """The node an episode was sent to was lost (the reason is in ``lost``)."""


class RayExecutor(Executor):
    """Plays episodes on per-node actors of a Ray cluster (see the module docstring).

    Args:
        model_factory: Builds a model from a :class:`ModelSpec` on each node; must pickle
            (a module-level function or a ``functools.partial`` of one).
        address: The cluster (``ray://host:10001`` or ``host:6379``); ``None``: the
            cluster this machine belongs to (``RAY_ADDRESS``, a local ``ray start``),
            else a single-node cluster started for the run and stopped after it.
        run_id, sandbox_type, image_map, no_network: As for
            :class:`~gem_eval.runner.provision.Provisioner` (one per node).
        concurrency: The run's episodes in flight: a model's connection cap unless
            its spec says otherwise, split between the nodes.
        log: Hears each node's setup lines (images built), prefixed with the node.
        cache: Use the response cache (each node its own: see
            :class:`~gem_eval.runner.node_worker.NodeWorker`).
    """

    def __init__(
        self,
        model_factory: Callable[[ModelSpec], Any],
        *,
        address: str | None = None,
        run_id: str | None = None,
        sandbox_type: str | None = None,
        image_map: dict[str, str] | None = None,
        no_network: bool = False,
        concurrency: int = 64,
        log: Callable[[str], None] | None = None,
        cache: bool = False,
    ) -> None:
        self.model_factory = model_factory
        self.cache = cache
        self._cache_counts: dict[str, int] | None = None
        self.address = address
        self.provisioner_args: dict[str, Any] = {
            "run_id": run_id,
            "sandbox_type": sandbox_type,
            "image_map": dict(image_map or {}),
            "no_network": no_network,
        }
        self.concurrency = concurrency
        self.log: Callable[[str], None] = log or (lambda _: None)
        self.tasks: list[TaskSpec] = []
        self.workers: dict[str, Any] = {}  # node id -> its actor handle
        self.load: Counter[str] = Counter()  # node id -> episodes in flight there
        self.played: Counter[str] = Counter()  # node id -> episodes recorded from it
        self.lost: dict[str, str] = {}  # node id -> why it was dropped
        self.dead: set[str] = set()  # lost nodes whose actor is gone too
        self.inflight: dict[str, set[Any]] = {}  # node id -> refs of its episodes
        self.retried = 0  # episodes played again after their node was lost
        self._described: dict[str, Any] = {}
        self._ray: Any = None
        self._connected = False

    def check(self, tasks: list[TaskSpec]) -> None:
        # The nodes check their own tools and engines in start(): the driver may have
        # no Docker at all.
        self.tasks = tasks

    async def start(self, models: list[ModelSpec]) -> None:
        ray = self._connect()
        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        if not nodes:
            raise UserError(f"the Ray cluster at {self.address or 'auto'} has no live node")
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        actor = ray.remote(NodeWorker)
        for node in nodes:
            # num_cpus=0: the actor waits on models and sandboxes; a node's CPUs stay
            # for what its episodes run. Pinned (soft=False): one actor per node.
            self.workers[node] = actor.options(
                num_cpus=0,
                max_concurrency=10_000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote(self.model_factory, self.provisioner_args, self.cache)
        shares = [_share(m, self.concurrency, len(nodes)) for m in models]
        await self._each("check", self.tasks)
        await self._each("start", shares)

    async def prepare(self, tasks: list[TaskSpec]) -> None:
        lines = await self._each("prepare", tasks)
        for node, said in lines.items():
            for line in said:
                self.log(f"node {node[:8]}: {line}")

    async def run(self, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        started = time.time()
        tried = 0
        while True:
            live = [n for n in self.workers if n not in self.lost]
            if not live:
                reasons = "; ".join(sorted(set(self.lost.values())))
                return failed_record(run_id, spec, started, NoNodesLeftError(reasons))
            node = min(live, key=lambda n: self.load[n])  # the least busy node
            try:
                record = await self._run_on(node, run_id, spec)
            except _NodeLost:
                tried += 1
                continue  # at once, on another node
            if tried:
                self.retried += 1
            return record

    async def _run_on(self, node: str, run_id: str, spec: EpisodeSpec) -> EpisodeRecord:
        """Play ``spec`` on ``node``; raise :class:`_NodeLost` when the node is lost
        meanwhile (it died, its engine went away, or another episode found it so)."""
        self.load[node] += 1
        ref = self.workers[node].run.remote(run_id, spec)
        refs = self.inflight.setdefault(node, set())
        refs.add(ref)
        try:
            record: EpisodeRecord
            record, files = await ref
        except asyncio.CancelledError:
            self._ray.cancel(ref)  # the node releases the episode's sandbox
            raise
        except self._ray.exceptions.RayTaskError as exc:  # the node's executor raised
            cause = _cause(exc)
            if isinstance(cause, EngineLostError):
                self._drop(node, f"node {node[:8]}: {cause}", dead=False)
                raise _NodeLost from None
            if node in self.lost:  # cancelled there as the node was dropped
                raise _NodeLost from None
            raise cause from None
        except Exception as exc:  # the actor, its worker process or its node died
            if node in self.lost and isinstance(exc, self._ray.exceptions.TaskCancelledError):
                raise _NodeLost from None
            if not _is_lost(self._ray, exc):
                raise
            self._drop(node, f"node {node[:8]}: {type(exc).__name__}", dead=True)
            raise _NodeLost from None
        finally:
            self.load[node] -= 1
            refs.discard(ref)
        self.played[node] += 1
        record.attach(files)  # a private attribute: moved explicitly, not trusted to pickle
        return record

    def _drop(self, node: str, why: str, *, dead: bool) -> None:
        """Send ``node`` no more episodes and cancel those it holds (each is played
        again elsewhere by the :meth:`run` awaiting it)."""
        if dead:
            self.dead.add(node)
        if node in self.lost:
            return
        self.lost[node] = why
        self.log(f"{why}: its episodes go to the other nodes")
        for ref in list(self.inflight.get(node, ())):
            with contextlib.suppress(Exception):
                self._ray.cancel(ref)

    def describe(self) -> dict[str, Any]:
        return self._described

    def cache_counts(self) -> dict[str, int] | None:
        """The nodes' response-cache hits and misses, summed (known after :meth:`aclose`;
        a lost node's are lost with it)."""
        return self._cache_counts

    async def aclose(self) -> None:
        if self._ray is None:
            return
        ray = self._ray
        try:
            # A node lost with its engine, not its actor, still closes (its cleanup).
            live = {n: w for n, w in self.workers.items() if n not in self.dead}
            described = await _gather(ray, {n: w.describe.remote() for n, w in live.items()})
            if self.cache:
                counts = await _gather(ray, {n: w.cache_counts.remote() for n, w in live.items()})
                self._cache_counts = dict(
                    sum((Counter(c) for c in counts.values() if isinstance(c, dict)), Counter())
                )
            closed = await _gather(ray, {n: w.aclose.remote() for n, w in live.items()})
            for node, said in closed.items():
                for line in said if isinstance(said, list) else ():
                    self.log(f"node {node[:8]}: {line}")
            self._described = _merge([d for d in described.values() if isinstance(d, dict)])
            about: dict[str, Any] = {"nodes": {n[:8]: self.played[n] for n in self.workers}}
            if self.lost:
                about["lost"] = {n[:8]: why for n, why in self.lost.items()}
                about["retried"] = self.retried
            failed = {n[:8]: str(e) for n, e in closed.items() if isinstance(e, BaseException)}
            if failed:  # sandboxes a node could not remove: `gem-eval sandbox cleanup` there
                about["close_errors"] = failed
            self._described["ray"] = about
        finally:
            for worker in self.workers.values():
                with contextlib.suppress(Exception):  # already dead with its node
                    ray.kill(worker)
            self.workers.clear()
            if self._connected:
                ray.shutdown()

    def _connect(self) -> Any:
        try:
            import ray
        except ImportError:
            raise UserError(INSTALL_HINT) from None
        self._ray = ray
        if not ray.is_initialized():
            # A cluster this machine belongs to when there is one; else a local one-node
            # cluster for this run only (no dashboard: it is the driver's CPU).
            kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": "warning"}
            if self.address is None:
                kwargs["include_dashboard"] = False
            try:
                ray.init(address=self.address, **kwargs)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise UserError(f"cannot reach the Ray cluster {self.address}: {exc}") from None
            self._connected = True
        return ray

    async def _each(self, method: str, *args: Any) -> dict[str, Any]:
        """Call ``method`` on every live node's actor, for the run's set-up (check the
        tools and engines, start the models, build the images). A node that fails it
        (its Docker engine away, a key missing from its environment) or died is dropped
        as lost, with a line, while another node succeeded; when none did, the first
        node's error is raised (the same error everywhere: the suite's, not a node's)."""
        live = {n: w for n, w in self.workers.items() if n not in self.lost}
        refs = {n: getattr(w, method).remote(*args) for n, w in live.items()}
        results: dict[str, Any] = {}
        failed: dict[str, BaseException] = {}
        for node, ref in refs.items():
            try:
                results[node] = await ref
            except self._ray.exceptions.RayTaskError as exc:
                failed[node] = _cause(exc)
            except Exception as exc:
                if not _is_lost(self._ray, exc):
                    raise
                self._drop(node, f"node {node[:8]}: {type(exc).__name__}", dead=True)
        if refs and not results:
            if failed:
                raise next(iter(failed.values()))
            reasons = "; ".join(sorted(set(self.lost.values())))
            raise NoNodesLeftError(reasons)
        for node, error in failed.items():
            why = " ".join(str(error).split()) or type(error).__name__
            self._drop(node, f"node {node[:8]}: {method} failed: {why}", dead=False)
        return results


def _share(model: ModelSpec, concurrency: int, nodes: int) -> ModelSpec:
    """``model`` with its connection cap split between ``nodes`` (at least 1 each)."""
    total = model.max_connections or concurrency
    return model.model_copy(update={"max_connections": max(1, total // nodes)})


def _cause(exc: Any) -> BaseException:
    """The exception a node raised (a ``UserError`` stays one line), else Ray's own."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, Exception) else exc


def _is_lost(ray: Any, exc: BaseException) -> bool:
    """Whether ``exc`` says the episode's node, actor or worker process went away."""
    lost = (
        ray.exceptions.RayActorError,
        ray.exceptions.WorkerCrashedError,
        ray.exceptions.NodeDiedError,
        ray.exceptions.ObjectLostError,
    )
    return isinstance(exc, lost)


async def _gather(ray: Any, refs: dict[str, Any]) -> dict[str, Any]:
    """Each ref's value, or the exception it raised (a node gone by the end)."""
    results = await asyncio.gather(*refs.values(), return_exceptions=True)
    return dict(zip(refs, results, strict=True))


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The nodes' resource descriptions as one (the same sandbox on two nodes: once)."""
    merged: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                merged.setdefault(key, {}).update(value)
            else:
                merged[key] = value
    return merged
