"""What a run of a suite would fail on, found before the run starts.

:func:`check_suite` takes every task and sample a run would play and builds the env's
keyword arguments as the run does (the task's ``args`` and the sample's dataset fields:
:meth:`~gem_eval.records.EpisodeSpec.env_kwargs`), then constructs the env from them,
with its ``check_settings()`` when it has one (a game sets up one board, a
reasoning-gym env builds its dataset). Constructing an env starts nothing: sandboxes,
tool servers and images are the runner's, at episode time. Samples with equal arguments
are built once, so a game task costs one construction whatever its sample count. Each
task's generation settings are checked too (:mod:`gem_eval.models.generation`).

A problem names the line that set what is at fault: the argument the env's message
names, else the task's ``args`` (or its ``dataset``, when only some rows fail).

:func:`check_file` is ``gem-eval suites validate``: every problem of a file, the
loader's (:func:`~gem_eval.suites.loader.collect_suite`) and these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_eval.errors import EnvArgumentError, UserError
from gem_eval.records import EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.suites.problems import Problem
from gem_eval.suites.selection import Selection, show_ids
from gem_eval.suites.suite import Suite, SuiteTask


def check_suite(
    suite: Suite,
    *,
    overrides: dict[str, Any] | None = None,
    select: Selection | None = None,
    limit: int | None = None,
) -> list[Problem]:
    """Every env a run of ``suite`` would build and could not, and every bad
    generation setting, one problem each (several samples failing alike: one).

    Args:
        suite: A loaded suite.
        overrides, select, limit: As the run gives them to
            :meth:`~gem_eval.suites.Suite.episodes`: only what the run plays is checked.

    Raises:
        SuiteError: ``overrides`` or ``limit`` are invalid.
        UserError: A part of ``select`` matches nothing.
    """
    episodes = suite.episodes(
        [ModelSpec(name="check")], limit=limit, epochs=1, overrides=overrides, select=select
    )
    by_task: dict[str, list[EpisodeSpec]] = {}
    for episode in episodes:
        by_task.setdefault(episode.task.id, []).append(episode)
    tasks = {task.spec.id: task for task in suite.tasks}
    problems: list[Problem] = []
    for task_id, played in by_task.items():
        task = tasks[task_id]
        problems += _generation_problems(task, played[0].task.generation)
        problems += _agent_problems(task, played[0].task)
        problems += _env_problems(task, played)
    return problems


def check_file(
    path_or_name: str | Path,
    *,
    search_dirs: Sequence[str | Path] | None = None,
    registry: str | None = None,
) -> tuple[Suite | None, list[Problem]]:
    """Every problem of a suite file: the loader's, then :func:`check_suite`'s on the
    tasks that resolved; in the order of the file, each once (a task file named twice
    is checked twice). ``registry``: where ``NAME@VERSION`` datasets are looked up (see
    :func:`~gem_eval.suites.loader.load_suite`).

    Returns:
        The suite (``None`` when it cannot be loaded at all) and its problems.
    """
    from gem_eval.suites.loader import collect_suite

    suite, problems = collect_suite(path_or_name, search_dirs=search_dirs, registry=registry)
    if suite is not None:
        problems = problems + check_suite(suite)
    unique = dict.fromkeys(problems)
    return suite, sorted(unique, key=lambda p: (p.path or "", p.line or 0))


@dataclass(frozen=True)
class BuildFailure:
    """Why an env cannot be built.

    Attributes:
        message: One line.
        arguments: The env refused its arguments (else: the env itself, e.g. its
            optional package is not installed).
    """

    message: str
    arguments: bool


def build_failure(env_id: str, kwargs: dict[str, Any]) -> BuildFailure | None:
    """Why the env ``env_id`` cannot be built from ``kwargs``, or ``None``.

    The constructor runs, then the env's ``check_settings()`` when it has one.
    """
    from gem_eval.registration import make

    try:
        env = make(env_id, **kwargs)
    except EnvArgumentError as exc:
        return BuildFailure(str(exc), arguments=True)
    except UserError as exc:  # an unknown id, a missing package
        return BuildFailure(str(exc), arguments=False)
    except Exception as exc:  # it fails with these arguments: every episode would
        return BuildFailure(f"{env_id}: {type(exc).__name__}: {exc}", arguments=True)
    try:
        check = getattr(env.unwrapped, "check_settings", None)
        if callable(check):
            check()
    except (ValueError, TypeError) as exc:
        return BuildFailure(f"{env_id}: {exc}", arguments=True)
    finally:
        env.close()
    return None


def blamed_key(message: str, keys: Sequence[str]) -> str | None:
    """The first of ``keys`` that ``message`` names as a word (``max_number``)."""
    for key in keys:
        if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", message):
            return key
    return None


def _env_problems(task: SuiteTask, played: list[EpisodeSpec]) -> list[Problem]:
    built: dict[str, BuildFailure | None] = {}
    failed: dict[BuildFailure, list[int]] = {}
    for episode in played:
        try:
            kwargs = episode.env_kwargs()
        except EnvArgumentError as exc:
            failure: BuildFailure | None = BuildFailure(str(exc), arguments=True)
        else:
            identity = json.dumps(kwargs, sort_keys=True, default=repr)
            if identity not in built:
                built[identity] = build_failure(task.spec.env_id, kwargs)
            failure = built[identity]
        if failure is not None:
            failed.setdefault(failure, []).append(episode.sample)
    problems = []
    for failure, samples in failed.items():
        some = len(samples) < len(played)
        problems.append(_located(task, failure, some, show_ids(samples) if some else ""))
    return problems


def _located(task: SuiteTask, failure: BuildFailure, some: bool, samples: str) -> Problem:
    """``failure`` at the argument it names, else at the task's ``dataset`` (when only
    some rows fail, or a field is at fault) or its ``args``; at its ``env`` when it is
    not the arguments' fault."""
    message = failure.message
    args = list(task.spec.env_kwargs)
    fields = list((task.rows or [{}])[0]) if task.rows else []
    key = blamed_key(message, args)
    where: tuple[str, ...]
    if not failure.arguments:
        where = ("env",)
    elif key is not None:
        where = ("args", key)
    elif (field := blamed_key(message, fields)) is not None:
        where = ("dataset", "fields", field)
    else:
        where = ("dataset",) if task.rows is not None and (some or not args) else ("args",)
    if samples:
        message = f"sample{'s' if re.search(r'[-,]', samples) else ''} {samples}: {message}"
    return _problem(task, where, message)


def _generation_problems(task: SuiteTask, settings: dict[str, Any]) -> list[Problem]:
    from gem_eval.models.generation import generation_problems

    return [
        _problem(task, ("generation", key), message)
        for key, message in generation_problems(settings)
    ]


def _agent_problems(task: SuiteTask, spec: TaskSpec) -> list[Problem]:
    """An ``agent:`` that names no agent, or one that cannot play the task's family."""
    from gem_eval.agents.registry import check_agents

    try:
        check_agents([spec])
    except UserError as exc:
        return [_problem(task, ("agent",), str(exc))]
    return []


def _problem(task: SuiteTask, key: tuple[str, ...], message: str) -> Problem:
    origin = task.origin(*key)
    if origin is not None:
        return Problem(origin.path, origin.line, origin.field, message)
    path, _, line = task.source.rpartition(":")
    return Problem(path or None, int(line) if line.isdigit() else None, "", message)
