"""Plan a run: from a suite (or a request) to the episodes to play, or a resumed run's
episodes still missing. Nothing is written here: :mod:`gem_eval.runner.session` plays the
plan and records it.
"""

from __future__ import annotations

import platform
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gem_eval._version import __version__
from gem_eval.errors import UserError
from gem_eval.outcomes import CAPPED_OUTCOMES, OUTCOMES
from gem_eval.records import EpisodeSpec, ModelSpec, RunManifest
from gem_eval.runner import resume as resume_rules
from gem_eval.runner.request import CONNECTION_FIELDS, RunRequest
from gem_eval.runner.resume import ResumeRequest
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
    from gem_eval.registry.fetch import recorded_registry
    from gem_eval.store import RunDir
    from gem_eval.store.run_dir import check_root
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
        registry = recorded_registry(manifest.extra)  # the one its datasets came from
        suite = load_suite(manifest.suite_path or manifest.suite, registry=registry)
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
        check_root(results_dir)
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
            extra={
                "options": asdict(options),
                **({"datasets": suite.datasets} if suite.datasets else {}),
                **(extra or {}),
            },
        )
        run_dir = RunDir(Path(results_dir) / manifest.run_id)
    manifest.episodes_planned = len(specs)
    history = run_dir.history(CAPPED_OUTCOMES)
    todo = _still_to_play(specs, history, options.max_attempts)
    if resume is not None:  # a forced --agent: the tasks as this session plays them
        manifest.tasks = resume_rules.replayed_tasks(manifest.tasks, [s.task for s in todo])
        todo = resume_rules.with_paid_replies(todo, run_dir, manifest.sessions)
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


def _known(agent: str) -> bool:
    """Whether ``agent`` names an agent (an unknown one is the suite check's to name, at
    its line)."""
    from gem_eval.agents.registry import agent_info

    try:
        agent_info(agent)
    except UserError:
        return False
    return True


def _check(suite: Suite, options: RunOptions) -> None:
    """Refuse a suite whose envs could not be built as this run builds them (the checks of
    ``gem-eval suites validate``), before anything is written."""
    from gem_eval.agents.registry import check_agents
    from gem_eval.suites.check import check_suite

    if "agent" in options.overrides:  # --agent: said of the option, not of a suite line
        check_agents(suite.task_specs(options.overrides, options.selection or None))
    problems = check_suite(
        suite, overrides=options.overrides, select=options.selection, limit=options.limit
    )
    if problems:
        more = f" (and {len(problems) - 1} more: gem-eval suites validate lists them)"
        raise UserError(str(problems[0]) + (more if len(problems) > 1 else ""))


def _suite(suite_ref: str | Suite | None, registry: str | None = None) -> Suite:
    from gem_eval.suites import Suite, load_suite

    if suite_ref is None:
        raise UserError("give --suite (or --resume RUN_ID)")
    return suite_ref if isinstance(suite_ref, Suite) else load_suite(suite_ref, registry=registry)


def plan_request(request: RunRequest, *, preflight: Preflight | None = None) -> PlannedRun:
    """:func:`plan_run` for a request: a new run's models from ``--model`` (with their own
    connection settings), else from ``--models`` or the suite's ``models:``."""
    options = RunOptions(**{k: v for k, v in request.options.items() if v is not None})
    if request.resume is not None:
        from gem_eval.store import session_lock

        plan = plan_run(
            None,
            [],
            options,
            request.results_dir,
            resume=request.resume,
            request=resume_request(request),
            preflight=preflight,
        )
        session_lock.check_free(plan.run_dir.path)  # before any model or image is made
        return plan
    suite, models = _request_models(request)
    _check_reference_agents(suite, models, options)
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
    _check_reference_agents(suite, models, options)
    return preview_run(suite, models, options, request.results_dir)


def _check_reference_agents(suite: Suite, models: Sequence[ModelSpec], options: RunOptions) -> None:
    """Refuse a reference model (``oracle``, ``noop``) for tasks an agent program plays:
    ``oracle`` applies the task's reference solution itself (the agent would be scored
    for it), and an agent that hears only "Done." asks again until its time runs out.
    (``gem-eval tasks check --agent`` plays ``noop`` with the agent's turns capped.)"""
    from gem_eval.agents.registry import DEFAULT_AGENT
    from gem_eval.models.reference import REFERENCE_MODELS

    reference = [m.name for m in models if m.name in REFERENCE_MODELS]
    if not reference:
        return
    specs = suite.task_specs(options.overrides, options.selection or None)
    agents = sorted({s.agent for s in specs if s.agent != DEFAULT_AGENT and _known(s.agent)})
    if agents:
        raise UserError(
            f"--model {reference[0]} plays gem-eval's own loop, not agent {agents[0]!r}: give "
            f"a real model for the agent, or `gem-eval tasks check SUITE --agent {agents[0]}` "
            "to check that the agent runs in each task"
        )


def _request_models(request: RunRequest) -> tuple[Suite, list[ModelSpec]]:
    """The suite, and the models the request plays: its ``--model`` s, else those of
    ``--models``, else the suite's ``models:`` (read only when used)."""
    from gem_eval.suites.models import expand_models, load_models_file

    suite = _suite(request.suite, request.registry)
    if request.models:
        return suite, request.model_specs()
    if request.models_file is not None:
        return suite, request.model_specs(load_models_file(request.models_file))
    return suite, request.model_specs(expand_models(suite.models, suite.path))


def resume_request(request: RunRequest) -> ResumeRequest:
    """What a request asks of a resumed run (see :mod:`gem_eval.runner.resume`)."""
    return ResumeRequest(
        connection={k: request.shared.get(k) for k in CONNECTION_FIELDS},
        per_model=_per_model(request),
        options=dict(request.options),
        model_args=dict(request.model_args) if request.model_args is not None else None,
        suite=request.suite,
        models=[m.name for m in request.models] or None,
        extra={k: dict(v) for k, v in request.extra.items()},
        force=request.force,
    )


def _per_model(request: RunRequest) -> dict[str, dict[str, Any]]:
    """The settings a resume was given for one model each: those after its ``--model``,
    and its ``--price``."""
    per_model = {m.name: dict(m.settings) for m in request.models if m.settings}
    for name, price in request.prices.items():
        per_model.setdefault(name, {})["price"] = price
    return per_model


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


def _suite_names(manifest: RunManifest) -> set[str]:
    """What ``--suite`` may say on resume: the run's suite, by name or by its path."""
    names = {manifest.suite}
    if manifest.suite_path:
        names |= {manifest.suite_path, Path(manifest.suite_path).stem}
    return names


def git_commit() -> str | None:
    """The commit of gem-eval's own checkout when it runs from one (an editable install),
    for the manifest; ``None`` for an installed package (even one whose environment lies
    in another project's checkout) or without git."""
    package = Path(__file__).resolve().parents[1]  # .../gem_eval
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
            cwd=package,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split()
    if len(lines) != 2 or Path(lines[0]).resolve() != package.parent:
        return None
    return lines[1]
