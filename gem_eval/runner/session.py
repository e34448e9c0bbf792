"""A whole run: plan it from a suite, record it in the store, resume it after a crash.

suite YAML -> episode specs -> runner (executor: env + model + tools) -> records
-> results/<run-id>/episodes.jsonl + results/index.sqlite
"""

from __future__ import annotations

import asyncio
import functools
import platform
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval._version import __version__
from gem_eval.errors import StoreWriteError, UserError
from gem_eval.outcomes import CAPPED_OUTCOMES, OUTCOMES
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, RunManifest
from gem_eval.runner import resume as resume_rules
from gem_eval.runner.executor import Executor, LocalExecutor
from gem_eval.runner.provision import Provisioner
from gem_eval.runner.request import CONNECTION_FIELDS, RunRequest
from gem_eval.runner.resume import ResumeRequest
from gem_eval.runner.runner import Runner, RunSummary
from gem_eval.suites.selection import Selection

if TYPE_CHECKING:
    from gem_eval.records import TaskSpec
    from gem_eval.suites import Suite

Preflight = Callable[[list[ModelSpec], list["TaskSpec"], "RunOptions"], None]
"""Checks a run's models (and its tasks' judges) before anything is written; raises
:class:`~gem_eval.errors.UserError` for one that cannot be used (see
:func:`gem_eval.runner.preflight.check_setup`)."""


@dataclass
class RunOptions:
    """What the command line adds to a suite; kept in the manifest for ``--resume``."""

    limit: int | None = None
    epochs: int | None = None
    seed: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 64
    max_cost_usd: float | None = None
    max_attempts: int = 3
    """Times an episode is played in all when it keeps ending in a capped outcome
    (``infra_error``, ``env_error``): ``--resume`` gives up on it after that."""
    sandbox: str | None = None
    image_map: dict[str, str] = field(default_factory=dict)
    no_network: bool = False
    tasks: list[str] = field(default_factory=list)
    """``--task``: globs on task ids (see :mod:`gem_eval.suites.selection`)."""
    samples: list[int] = field(default_factory=list)
    """``--sample``: sample indices."""
    categories: list[str] = field(default_factory=list)
    """``--category``: task categories."""
    cache: bool = False
    """``--cache``: model replies come from (and go to) the response cache."""

    @property
    def selection(self) -> Selection:
        return Selection.parse(self.tasks, self.samples, self.categories)


@dataclass
class PlannedRun:
    """A run ready to play: its directory, manifest, and the episodes still to play."""

    run_dir: Any
    manifest: RunManifest
    todo: list[EpisodeSpec]
    done: Counter[str]
    totals: Counter[str]
    given_up: int = 0
    """Episodes given up in earlier sessions (``--max-attempts``): not played now."""
    new: bool = False
    """A new run: its directory is made once the run is set up (models started, images
    built), so a run that never started leaves nothing behind."""


def plan_run(
    suite_ref: str | Suite | None,
    models: Sequence[ModelSpec],
    options: RunOptions,
    results_dir: Path,
    *,
    resume: str | None = None,
    request: ResumeRequest | None = None,
    preflight: Preflight | None = None,
    extra: dict[str, Any] | None = None,
) -> PlannedRun:
    """Plan a new run (or reopen one with ``resume``) and list the episodes left to play.
    Nothing is written: a new run's directory is made by :func:`execute_run` once the
    run is set up.

    On resume, the suite, models and options come from the run's manifest; ``request``
    may change how models are reached and how the run is paced, not what it measures
    (see :mod:`gem_eval.runner.resume`). The suite file must still hash the same, so
    that no finished episode changes meaning (unless forced).

    Args:
        preflight: Checks the models that will play (none when nothing is left to play).
        extra: A new run's command settings, kept in ``manifest.extra`` (``rollout``).
    """
    from gem_eval.store import RunDir
    from gem_eval.suites import load_suite

    if resume is not None:
        run_dir = RunDir.open(results_dir, resume)
        manifest = run_dir.read_manifest()
        imported = manifest.extra.get("imported")
        if imported:
            raise UserError(
                f"run {manifest.run_id} was imported from {imported.get('source')} "
                f"({imported.get('path')}): gem-eval cannot play it on"
            )
        request = request or ResumeRequest()
        if request.suite is not None and request.suite not in _suite_names(manifest):
            raise UserError(
                f"run {manifest.run_id} played suite {manifest.suite!r}: drop --suite "
                "or start a new run"
            )
        suite = load_suite(manifest.suite_path or manifest.suite)
        stored = manifest.extra["options"]
        digest = suite.digest(seed=stored.get("seed"), overrides=stored.get("overrides"))
        models, merged, session = resume_rules.apply(
            request, list(manifest.models), stored, digest != manifest.suite_hash, manifest.extra
        )
        for section, given in request.extra.items():  # the stored ones, unless forced
            kept = {k: v for k, v in given.items() if v is not None}
            manifest.extra[section] = {**(manifest.extra.get(section) or {}), **kept}
        options = RunOptions(**merged)
        if "--suite" in session["forced"] or request.force:
            manifest.suite_hash = suite.digest(seed=options.seed, overrides=options.overrides)
        manifest.models, manifest.extra["options"] = models, asdict(options)
        manifest.max_cost_usd = options.max_cost_usd
        manifest.sessions.append(session)
    else:
        suite, options = _new_run(suite_ref, models, options)
    specs = _episodes(suite, models, options)
    if resume is None:
        from gem_eval.store.run_id import new_run_id

        if preflight is not None:
            preflight(list(models), suite.task_specs(options.overrides, options.selection), options)

        manifest = RunManifest(
            run_id=new_run_id(suite.name),
            suite=suite.name,
            suite_path=str(suite.path.resolve()) if suite.path else None,
            # What each sample is, with this run's seed and overrides: runs with equal
            # hashes played the same samples, so they can be compared pair by pair.
            suite_hash=suite.digest(seed=options.seed, overrides=options.overrides),
            models=list(models),
            tasks=suite.task_specs(options.overrides, options.selection),
            episodes_planned=len(specs),
            seed=options.seed,
            epochs=max((s.epoch for s in specs), default=0) + 1,
            gem_eval_version=__version__,
            git_commit=git_commit(),
            host=platform.node(),
            started_at=time.time(),
            max_cost_usd=options.max_cost_usd,
            extra={"options": asdict(options), **(extra or {})},
        )
        run_dir = RunDir(Path(results_dir) / manifest.run_id)
    manifest.episodes_planned = len(specs)
    history = run_dir.history(CAPPED_OUTCOMES)
    todo = _still_to_play(specs, history, options.max_attempts)
    totals = Counter(s.task.id for s in specs)
    done = totals - Counter(s.task.id for s in todo)
    given_up = sum(
        1
        for spec in specs
        if (last := history.get(spec.key)) is not None
        and OUTCOMES[last[0]].capped
        and last[1] >= options.max_attempts
    )
    if resume is not None and todo and preflight is not None:
        tasks = list({s.task.id: s.task for s in todo}.values())
        preflight(list(manifest.models), tasks, options)
    return PlannedRun(run_dir, manifest, todo, done, totals, given_up, new=resume is None)


@dataclass
class Preview:
    """The episodes a run would play now, and what its history is looked up by (for
    ``--dry-run`` and ``--confirm-above``): nothing is created or written."""

    suite: str
    suite_hash: str
    episodes: list[EpisodeSpec]
    concurrency: int
    """The run's episodes in flight (a resumed run's own unless changed)."""


def preview_run(
    suite_ref: str | Suite | None,
    models: Sequence[ModelSpec],
    options: RunOptions,
    results_dir: Path,
    *,
    resume: str | None = None,
    request: ResumeRequest | None = None,
) -> Preview:
    """What :func:`plan_run` with the same arguments would play, creating nothing (a
    resumed run: the episodes still missing)."""
    if resume is not None:
        plan = plan_run(suite_ref, models, options, results_dir, resume=resume, request=request)
        played = RunOptions(**plan.manifest.extra["options"])
        return Preview(plan.manifest.suite, plan.manifest.suite_hash, plan.todo, played.concurrency)
    suite, options = _new_run(suite_ref, models, options)
    digest = suite.digest(seed=options.seed, overrides=options.overrides)
    return Preview(suite.name, digest, _episodes(suite, models, options), options.concurrency)


def _new_run(
    suite_ref: str | Suite | None, models: Sequence[ModelSpec], options: RunOptions
) -> tuple[Suite, RunOptions]:
    """A new run's suite, and its options with the suite's own settings (``cache: true``)."""
    if not models:
        raise UserError("give at least one --model")
    suite = _suite(suite_ref)
    _check(suite, options)
    if suite.cache and not options.cache:
        options = replace(options, cache=True)
    return suite, options


def _check(suite: Suite, options: RunOptions) -> None:
    """Refuse a suite whose envs could not be built as this run builds them (the checks of
    ``gem-eval suites validate``), before anything is written."""
    from gem_eval.suites.check import check_suite

    problems = check_suite(
        suite, overrides=options.overrides, select=options.selection, limit=options.limit
    )
    if problems:
        more = f" (and {len(problems) - 1} more: gem-eval suites validate lists them)"
        raise UserError(str(problems[0]) + (more if len(problems) > 1 else ""))


def _suite(suite_ref: str | Suite | None) -> Suite:
    from gem_eval.suites import Suite, load_suite

    if suite_ref is None:
        raise UserError("give --suite (or --resume RUN_ID)")
    return suite_ref if isinstance(suite_ref, Suite) else load_suite(suite_ref)


def plan_request(request: RunRequest, *, preflight: Preflight | None = None) -> PlannedRun:
    """:func:`plan_run` for a request: a new run's models from ``--model`` (with their own
    connection settings), else from ``--models`` or the suite's ``models:``."""
    options = RunOptions(**{k: v for k, v in request.options.items() if v is not None})
    if request.resume is not None:
        return plan_run(
            None,
            [],
            options,
            request.results_dir,
            resume=request.resume,
            request=resume_request(request),
            preflight=preflight,
        )
    suite, models = _request_models(request)
    extra = {k: dict(v) for k, v in request.extra.items()}
    return plan_run(suite, models, options, request.results_dir, preflight=preflight, extra=extra)


def preview_request(request: RunRequest) -> Preview:
    """:func:`preview_run` for a request (``--dry-run``): nothing is created."""
    options = RunOptions(**{k: v for k, v in request.options.items() if v is not None})
    if request.resume is not None:
        return preview_run(
            None, [], options, request.results_dir, resume=request.resume,
            request=resume_request(request),
        )  # fmt: skip
    suite, models = _request_models(request)
    return preview_run(suite, models, options, request.results_dir)


def _request_models(request: RunRequest) -> tuple[Suite, list[ModelSpec]]:
    from gem_eval.suites.models import load_models_file

    suite = _suite(request.suite)
    listed = load_models_file(request.models_file) if request.models_file else suite.models
    return suite, request.model_specs(listed)


def resume_request(request: RunRequest) -> ResumeRequest:
    """What a request asks of a resumed run (see :mod:`gem_eval.runner.resume`)."""
    return ResumeRequest(
        connection={k: request.shared.get(k) for k in CONNECTION_FIELDS},
        per_model={m.name: dict(m.settings) for m in request.models if m.settings},
        options=dict(request.options),
        model_args=dict(request.model_args) if request.model_args is not None else None,
        suite=request.suite,
        models=[m.name for m in request.models] or None,
        extra={k: dict(v) for k, v in request.extra.items()},
        force=request.force,
    )


def _episodes(suite: Suite, models: Sequence[ModelSpec], options: RunOptions) -> list[EpisodeSpec]:
    return list(
        suite.episodes(
            list(models),
            limit=options.limit,
            epochs=options.epochs,
            seed=options.seed,
            overrides=options.overrides,
            select=options.selection,
        )
    )


def _still_to_play(
    specs: list[EpisodeSpec], history: dict[str, tuple[str, int]], max_attempts: int
) -> list[EpisodeSpec]:
    """The episodes to play now, each with its attempt number: those never recorded, and
    those whose last record is replayed, unless capped ones already had ``max_attempts``."""
    todo = []
    for spec in specs:
        last, attempts = history.get(spec.key, (None, 0))
        if last is not None and not OUTCOMES[last].replay:
            continue
        if last is not None and OUTCOMES[last].capped and attempts >= max_attempts:
            continue  # given up: it stays as recorded
        attempt = attempts + 1
        todo.append(
            spec.model_copy(update={"attempt": attempt, "last_attempt": attempt >= max_attempts})
        )
    return todo


async def execute_run(
    plan: PlannedRun,
    *,
    executor: Executor | None = None,
    model_factory: Callable[[ModelSpec], Any] | None = None,
    sinks: Sequence[Callable[[EpisodeRecord], None]] = (),
    log: Callable[[str], None] | None = None,
    ray_address: str | None = None,
    on_ray: bool = False,
) -> RunSummary:
    """Play the planned episodes, writing each record as it finishes; ``log`` hears
    what is done before the first episode (each image built). ``on_ray``: on the nodes
    of a Ray cluster (``ray_address``; see :mod:`gem_eval.runner.ray_executor`)."""
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
    except BaseException:
        try:
            await executor.aclose()
        finally:
            if cache is not None:
                cache.close()
        raise
    failing = False
    try:
        manifest.status, manifest.finished_at, manifest.error = "running", None, None
        if plan.new:
            from gem_eval.store import RunDir

            plan.run_dir = RunDir.create(plan.run_dir.path.parent, manifest)
        else:
            plan.run_dir.write_manifest(manifest)
        record = _Recorder(plan.run_dir)
    except BaseException:
        try:
            await executor.aclose()
        finally:
            if cache is not None:
                cache.close()
        raise
    # Every episode recorded so far was paid for, superseded ones too, and its judge.
    spent = sum(_spent(r) for r in plan.run_dir.records())
    runner = Runner(
        manifest.run_id,
        executor,
        [record, *sinks],
        concurrency=options.concurrency,
        max_cost_usd=options.max_cost_usd,
        spent_usd=spent,
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
        try:
            await executor.aclose()
        finally:
            if cache is not None:
                cache.close()
        _count_cache(manifest, runner.summary, executor.cache_counts())
        manifest.resources = executor.describe() or manifest.resources
        if runner.summary.status == "interrupted":
            manifest.status = "interrupted"
        manifest.finished_at = time.time()
        try:
            plan.run_dir.write_manifest(manifest)
        except StoreWriteError:
            if not failing:
                raise
            # The first failure (a full disk) is the one to report; the old manifest
            # stays whole and says "running", which --resume handles.
        record.close(manifest)
    return summary


def settle_idle(plan: PlannedRun) -> RunSummary:
    """The summary of a resumed run with nothing left to play: no model is needed and
    nothing is played. Its status follows its records (``finished``, or ``incomplete``
    with given-up episodes); the manifest is written only when that corrects it."""
    manifest = plan.manifest
    summary = RunSummary(status="finished", given_up_before=plan.given_up)
    summary.cost_usd = sum(_spent(r) for r in plan.run_dir.records())
    summary.settle()
    stored = plan.run_dir.read_manifest()
    if stored.status != summary.status:
        stored.status, stored.error = summary.status, None
        stored.finished_at = stored.finished_at or time.time()
        plan.run_dir.write_manifest(stored)
        _Recorder(plan.run_dir).close(stored)
    manifest.status = stored.status
    return summary


def _spent(record: EpisodeRecord) -> float:
    """What an episode cost: its model's calls and its judge's."""
    judge = record.judge.usage.cost_usd if record.judge is not None else None
    return (record.cost_usd or 0.0) + (judge or 0.0)


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

    policy = RetryPolicy()
    if spec.max_retries is not None:
        policy = replace(policy, max_retries=spec.max_retries)
    if spec.timeout_s is not None:
        policy = replace(policy, timeout_s=spec.timeout_s)
    return get_model(
        spec.name,
        base_url=spec.base_url,
        api_key=api_key_from_env(spec.name, spec.base_url, spec.api_key_env),
        backend=spec.backend,
        retry=policy,
        concurrency=spec.max_connections or concurrency,
    )


def _suite_names(manifest: RunManifest) -> set[str]:
    """What ``--suite`` may say on resume: the run's suite, by name or by its path."""
    names = {manifest.suite}
    if manifest.suite_path:
        names |= {manifest.suite_path, Path(manifest.suite_path).stem}
    return names


def git_commit() -> str | None:
    """The commit of the working directory's git checkout, if any (for the manifest)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None
