"""A whole run: play a plan, record it in the store, resume it after a crash.

suite YAML -> episode specs (:mod:`gem_eval.runner.plan`) -> runner (executor: env + model
+ tools) -> records -> results/<run-id>/episodes.jsonl + results/index.sqlite
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gem_eval.errors import StoreWriteError
from gem_eval.records import EpisodeRecord, ModelSpec, RunManifest
from gem_eval.runner.executor import Executor, LocalExecutor
from gem_eval.runner.plan import (
    PlannedRun,
    Preflight,
    Preview,
    RunOptions,
    git_commit,
    plan_request,
    plan_run,
    preview_request,
    preview_run,
    resume_request,
)
from gem_eval.runner.provision import Provisioner
from gem_eval.runner.runner import Runner, RunSummary

if TYPE_CHECKING:
    from gem_eval.runner.request import RunRequest

__all__ = [  # planning lives in gem_eval.runner.plan; its names stay importable here
    "PlannedRun",
    "Preflight",
    "Preview",
    "RunOptions",
    "default_model_factory",
    "execute_run",
    "git_commit",
    "plan_request",
    "plan_run",
    "play_request",
    "preview_request",
    "preview_run",
    "resume_request",
    "settle_idle",
]


async def play_request(
    request: RunRequest,
    *,
    warn: Callable[[str], None],
    sinks: Sequence[Callable[[EpisodeRecord], None]] = (),
    log: Callable[[str], None] | None = None,
    on_plan: Callable[[PlannedRun], None] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> tuple[PlannedRun, RunSummary]:
    """A run as asked for, from start to end: the one way ``gem-eval run``, ``rollout``
    and :func:`gem_eval.evaluate` play a request.

    Plans it (in a thread: the checks of models, keys and servers may wait on the
    network; ``warn`` hears what they warn of), then plays what it lacks
    (:func:`execute_run`) or, with nothing left to play, settles its status
    (:func:`settle_idle`). ``on_plan`` sees the plan before anything is played.

    Raises:
        UserError: A bad suite, model or option, an unreachable server, a missing key
            (nothing is written).
    """
    from gem_eval.runner.preflight import check_setup

    def preflight(models: Any, tasks: Any, options: Any) -> None:
        check_setup(models, tasks, options, warn)

    plan = await asyncio.to_thread(plan_request, request, preflight=preflight)
    if on_plan is not None:
        on_plan(plan)
    if not plan.todo:
        return plan, settle_idle(plan)
    summary = await execute_run(
        plan,
        sinks=sinks,
        log=log,
        on_ray=request.executor == "ray",
        ray_address=request.ray_address,
        on_ready=on_ready,
    )
    return plan, summary


async def execute_run(
    plan: PlannedRun,
    *,
    executor: Executor | None = None,
    model_factory: Callable[[ModelSpec], Any] | None = None,
    sinks: Sequence[Callable[[EpisodeRecord], None]] = (),
    log: Callable[[str], None] | None = None,
    ray_address: str | None = None,
    on_ray: bool = False,
    on_ready: Callable[[], None] | None = None,
) -> RunSummary:
    """Play the planned episodes, writing each record as it finishes; ``log`` hears
    what is done before the first episode (each image built). ``on_ray``: on the nodes
    of a Ray cluster (``ray_address``; see :mod:`gem_eval.runner.ray_executor`).
    ``on_ready`` is called once the run is set up (models started, images built), before
    anything is written: a run that cannot be set up has not started."""
    manifest = plan.manifest
    options = RunOptions(**manifest.extra["options"])
    factory = model_factory or functools.partial(
        default_model_factory, concurrency=options.concurrency
    )
    cache = None
    if options.cache and executor is None and not on_ray:
        from gem_eval.models.response_cache import ResponseCache

        cache = ResponseCache()
    if executor is None and on_ray:
        from gem_eval.runner.ray_executor import RayExecutor

        executor = RayExecutor(
            factory,
            address=ray_address,
            run_id=manifest.run_id,
            sandbox_type=options.sandbox,
            image_map=options.image_map,
            no_network=options.no_network,
            concurrency=options.concurrency,
            log=log,
            cache=options.cache,
        )
    if executor is None:
        provisioner = Provisioner(
            manifest.run_id,
            options.sandbox,
            options.image_map,
            no_network=options.no_network,
            log=log,
        )
        executor = LocalExecutor(factory, provisioner, cache=cache)
        for sink in sinks:  # the progress display shows the sandboxes' limit
            show = getattr(sink, "sandboxes", None)
            if show is not None:
                provisioner.capacity.subscribe(show)
    tasks = list({spec.task.id: spec.task for spec in plan.todo}.values())
    try:  # set up before anything is written: a run that never started leaves no trace
        executor.check(tasks)
        await executor.start(manifest.models)
        await executor.prepare(tasks)
        if on_ready is not None:
            on_ready()
    except BaseException:
        await _release(executor, cache)
        raise
    failing = False
    manifest.executor = "ray" if on_ray else "local"
    if not plan.new and manifest.sessions:  # this session's entry
        manifest.sessions[-1]["executor"] = manifest.executor
    from gem_eval.store import session_lock

    lock = contextlib.ExitStack()  # the session lock: one process plays a run at a time
    try:
        manifest.status, manifest.finished_at, manifest.error = "running", None, None
        if plan.new:
            from gem_eval.store import RunDir

            plan.run_dir = RunDir.create(plan.run_dir.path.parent, manifest)
            lock.enter_context(session_lock.playing(plan.run_dir.path))
        else:
            lock.enter_context(session_lock.playing(plan.run_dir.path))
            plan.run_dir.write_manifest(manifest)
        record = _Recorder(plan.run_dir)
    except BaseException:
        lock.close()
        await _release(executor, cache)
        raise
    # Every episode recorded so far was paid for, superseded ones too, and its judge
    # (but the calls a record replayed from an earlier one: counted there).
    spent, seen = 0.0, []
    for earlier in plan.run_dir.records():
        spent += earlier.spent_usd
        if earlier.scored:  # it ran to its end: what the next such episode may cost
            seen.append((earlier.model, earlier.task_id, earlier.total_cost_usd))
    runner = Runner(
        manifest.run_id,
        executor,
        [record, *sinks],
        concurrency=options.concurrency,
        max_cost_usd=options.max_cost_usd,
        spent_usd=spent,
        seen_costs=seen,
    )
    runner.summary.given_up_before = plan.given_up
    try:
        summary = await runner.run(plan.todo)
    except BaseException as exc:
        failing = True
        stopped = isinstance(exc, asyncio.CancelledError | KeyboardInterrupt)
        manifest.status = "interrupted" if stopped else "failed"
        if not stopped:
            manifest.error = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise
    else:
        manifest.status, manifest.error = summary.status, summary.failure()
    finally:
        await _release(executor, cache)
        _count_cache(manifest, runner.summary, executor.cache_counts())
        manifest.resources = executor.describe() or manifest.resources
        if runner.summary.status == "interrupted":
            manifest.status = "interrupted"
        manifest.finished_at = time.time()
        try:
            try:
                plan.run_dir.write_manifest(manifest)
            except StoreWriteError:
                if not failing:
                    raise
                # The first failure (a full disk) is the one to report; the old manifest
                # stays whole and says "running", which --resume handles.
            record.close(manifest)
        finally:
            lock.close()  # the last write done: another process may resume the run
    return summary


async def _release(executor: Executor, cache: Any) -> None:
    """Close the executor (its models, sandboxes) and the response cache, if any."""
    try:
        await executor.aclose()
    finally:
        if cache is not None:
            cache.close()


def settle_idle(plan: PlannedRun) -> RunSummary:
    """The summary of a resumed run with nothing left to play: no model is needed and
    nothing is played. Its status follows its records (``finished``, or ``incomplete``
    with given-up episodes); the manifest is written only when that corrects it."""
    manifest = plan.manifest
    summary = RunSummary(status="finished", given_up_before=plan.given_up)
    summary.cost_usd = sum(r.spent_usd for r in plan.run_dir.records())
    summary.settle()
    stored = plan.run_dir.read_manifest()
    if stored.status != summary.status:
        stored.status, stored.error = summary.status, None
        stored.finished_at = stored.finished_at or time.time()
        plan.run_dir.write_manifest(stored)
        _Recorder(plan.run_dir).close(stored)
    manifest.status = stored.status
    return summary


def _count_cache(manifest: RunManifest, summary: RunSummary, counts: dict[str, int] | None) -> None:
    """This session's response-cache hits and misses, in the summary; the run's (every
    session's) in ``manifest.extra["cache"]``."""
    if counts is None:
        return
    summary.cache = dict(counts)
    total = manifest.extra.get("cache") or {}
    manifest.extra["cache"] = {k: total.get(k, 0) + counts.get(k, 0) for k in ("hits", "misses")}


class _Recorder:
    """Writes each finished episode: to ``episodes.jsonl`` first (the source of truth),
    then to the index, a cache that may lag (a full disk, a locked file) and catches up
    after the run or with ``gem-eval results reindex``."""

    def __init__(self, run_dir: Any) -> None:
        from gem_eval.store import Index

        self.run_dir, self.stale = run_dir, False
        self.index: Index | None = None
        try:
            self.index = Index.for_root(run_dir.path.parent)
            self.index.sync_run(run_dir)  # a crash may have left it behind the JSONL
        except sqlite3.Error:
            self.stale = True

    def __call__(self, record: EpisodeRecord) -> None:
        self.run_dir.append(record)
        if self.index is None:
            return
        try:
            self.index.add_episode(record)
        except sqlite3.Error:
            self.stale = True

    def close(self, manifest: RunManifest) -> None:
        if self.index is None:
            return
        try:
            self.index.add_run(manifest)
            if self.stale:
                self.index.sync_run(self.run_dir)
        except sqlite3.Error:
            pass  # the JSONL holds everything; reindex rebuilds the cache
        finally:
            self.index.close()


def default_model_factory(spec: ModelSpec, concurrency: int | None = None) -> Any:
    """A model from its spec, through :func:`gem_eval.models.get_model`.

    Args:
        spec: The model as the run names it.
        concurrency: The run's episodes in flight: the model's first connection limit
            unless ``spec.max_connections`` says otherwise.
    """
    from gem_eval.models import RetryPolicy, get_model
    from gem_eval.models.factory import api_key_from_env
    from gem_eval.models.reference import REFERENCE_MODELS

    # A reference agent calls nothing and a local model its own server: no key to read
    # (an --api-key-env given for every model is not theirs to miss).
    keyless = spec.name in REFERENCE_MODELS or spec.name.startswith("local/")
    policy = RetryPolicy()
    if spec.max_retries is not None:
        policy = replace(policy, max_retries=spec.max_retries)
    if spec.timeout_s is not None:
        policy = replace(policy, timeout_s=spec.timeout_s)
    return get_model(
        spec.name,
        base_url=spec.base_url,
        api_key=None if keyless else api_key_from_env(spec.name, spec.base_url, spec.api_key_env),
        backend=spec.backend,
        retry=policy,
        concurrency=spec.max_connections or concurrency,
        price=spec.price,
    )
