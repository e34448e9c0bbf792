"""Load a suite: find its file, read its YAML with line numbers, validate it, and
resolve its tasks (each item by :func:`~gem_eval.suites.resolve.resolve_item`, which
says how a task's keys are merged and looked up); task ids are unique within a suite.

Expansion into episodes is :class:`~gem_eval.suites.suite.Suite`'s.

Errors are :class:`~gem_eval.suites.schema.SuiteError`: one line, ``file:line: field: ...``.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from pathlib import Path

from gem_eval.bundled import bundled_root
from gem_eval.errors import UserError, did_you_mean
from gem_eval.registry.fetch import fetch_dataset
from gem_eval.registry.index import DatasetRef
from gem_eval.suites.layers import Layer
from gem_eval.suites.models import model_specs
from gem_eval.suites.problems import Problem, Problems, Validated, validated
from gem_eval.suites.registered import dataset_suite, family_doc
from gem_eval.suites.resolve import resolve_item
from gem_eval.suites.schema import Loc, SuiteError, SuiteFile, TaskFile
from gem_eval.suites.suite import Suite, SuiteTask
from gem_eval.suites.yaml_doc import YamlDoc, read_yaml


def suite_dirs(search_dirs: Sequence[str | Path] | None = None) -> list[Path]:
    """Where suites are found by name: ``search_dirs``, the bundled and the cwd's ``suites/``."""
    dirs = [Path(d) for d in search_dirs or ()] + [bundled_root() / "suites", Path.cwd() / "suites"]
    unique: dict[Path, Path] = {}
    for d in dirs:
        if d.is_dir():
            unique.setdefault(d.resolve(), d)
    return list(unique.values())


def list_suites(search_dirs: Sequence[str | Path] | None = None) -> dict[str, Path]:
    """``{name: path}`` of the suite files found; a name is the file stem, first dir wins."""
    found: dict[str, Path] = {}
    for d in suite_dirs(search_dirs):
        for path in sorted([*d.glob("*.yaml"), *d.glob("*.yml")]):
            found.setdefault(path.stem, path)
    return found


def find_suite(path_or_name: str | Path, search_dirs: Sequence[str | Path] | None = None) -> Path:
    """The file a suite name (``smoke``) or path (``suites/smoke.yaml``) refers to.

    Raises:
        SuiteError: No such file or suite; the message names the closest suites.
    """
    text = str(path_or_name)
    for path in (Path(text), bundled_root() / text):
        if _is_file(path):
            return path
    known = list_suites(search_dirs)
    if Path(text).suffix in (".yaml", ".yml") or "/" in text:
        raise SuiteError(f"suite file {text!r} not found")
    if text in known:
        return known[text]
    hint = did_you_mean(text, known) or (f" Known: {', '.join(known)}." if known else "")
    raise SuiteError(f"unknown suite {text!r}.{hint}")


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; ``False`` for a name the system refuses (too long)."""
    try:
        return path.is_file()
    except OSError:
        return False


def load_suite(
    path_or_name: str | Path,
    *,
    search_dirs: Sequence[str | Path] | None = None,
    registry: str | None = None,
) -> Suite:
    """Load, validate and resolve a suite file (or a lone task file, as a one-task suite).

    Args:
        path_or_name: A path, or a name looked up in :func:`suite_dirs`; else a registry
            dataset's ``NAME@VERSION`` (see :mod:`gem_eval.suites.registered`).
        search_dirs: Extra directories searched first for a name.
        registry: Where ``NAME@VERSION`` datasets are looked up (default:
            ``$GEM_EVAL_REGISTRY``, else Harbor's registry).

    Raises:
        SuiteError: Anything wrong with the suite, its task files or datasets; one line.
        RegistryError: A registry dataset that cannot be looked up or fetched; one line.
    """
    suite = _load(path_or_name, search_dirs, Problems(), registry)
    assert suite is not None  # not collecting: the first problem was raised
    return suite


def collect_suite(
    path_or_name: str | Path,
    *,
    search_dirs: Sequence[str | Path] | None = None,
    registry: str | None = None,
) -> tuple[Suite | None, list[Problem]]:
    """:func:`load_suite`, reporting every problem of the file rather than the first.

    Returns:
        The suite of the tasks that resolved (``None`` when the file cannot be read, or
        a mistake leaves no task to resolve as the file means it), and every problem
        found on the way (see :mod:`gem_eval.suites.problems`).
    """
    problems = Problems(collect=True)
    try:
        suite = _load(path_or_name, search_dirs, problems, registry)
    except UserError as exc:  # the file cannot be found or read: nothing else to check
        problems.items.append(Problem.of(exc))
        suite = None
    return suite, problems.items


def _load(
    path_or_name: str | Path,
    search_dirs: Sequence[str | Path] | None,
    problems: Problems,
    registry: str | None = None,
) -> Suite | None:
    try:
        path = find_suite(path_or_name, search_dirs)
    except SuiteError:
        if DatasetRef.parse(str(path_or_name)) is None:
            raise
        fetched = fetch_dataset(str(path_or_name), registry)  # no suite file: a dataset
        suite = _load_doc(family_doc(fetched), problems, registry)
        return None if suite is None else dataset_suite(suite, fetched)
    doc = read_yaml(path, collect=problems.collect)
    try:
        return _load_doc(doc, problems, registry)
    except OSError as exc:  # a path it names that the system refuses to look up
        if exc.errno != errno.ENAMETOOLONG:
            raise
        shown = str(exc.filename)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise doc.error((), f"a path it names is too long for this system: {shown!r}") from None


def _load_doc(doc: YamlDoc, problems: Problems, registry: str | None) -> Suite | None:
    for duplicate in doc.duplicates:
        problems.add(duplicate)
    data = doc.data
    if isinstance(data, dict) and "tasks" not in data and ("env" in data or "dataset" in data):
        lone_file = validated(doc, TaskFile, problems)
        if lone_file.value is None:
            return None
        values = lone_file.value.model_dump(exclude_unset=True)
        stem = doc.path.stem
        lone = resolve_item(doc, (), [], values, problems, lone_file.unsure, stem, registry)
        return Suite(name=stem, tasks=lone.tasks if lone.sound else [], path=doc.path)
    if not isinstance(data, dict):
        raise doc.error((), "a suite file is a mapping with a `tasks:` list")
    checked = validated(doc, SuiteFile, problems)
    suite = checked.value
    if suite is None:
        return None
    defaults = suite.defaults.model_dump(exclude_unset=True)
    base = [Layer(doc, ("defaults",), {k: v for k, v in defaults.items() if k != "seed"})]
    tasks = _tasks(doc, checked, base, problems, registry)
    try:
        models = model_specs(suite.models, doc, ("models",))
    except SuiteError as exc:
        problems.add(exc)
        models = []
    if not checked.kept:  # no task left to check (a mistake in `tasks`, reported)
        return None
    return Suite(
        name=suite.name or doc.path.stem,
        tasks=tasks,
        description=suite.description,
        path=doc.path,
        seed=suite.defaults.seed,
        defaults=defaults,
        cache=suite.cache,
        models=models,
    )


def _tasks(
    doc: YamlDoc,
    checked: Validated[SuiteFile],
    base: list[Layer],
    problems: Problems,
    registry: str | None,
) -> list[SuiteTask]:
    """The task items ``checked`` kept, resolved over ``base``, their ids compared;
    a task a mistake left unsound (see :class:`~gem_eval.suites.resolve.Resolved`) is
    left out."""
    assert checked.value is not None
    tasks: list[SuiteTask] = []
    seen: dict[str, int] = {}
    taken: set[str] = set()
    for index, item in zip(checked.kept, checked.value.tasks):
        loc: Loc = ("tasks", index)
        values = item.model_dump(exclude_unset=True)
        unsure = checked.unsure_of(index)
        resolved = resolve_item(doc, loc, base, values, problems, unsure, registry=registry)
        for task in resolved.tasks:
            if resolved.named and task.spec.id in seen:
                where = "id" if "id" in values else "file" if "file" in values else "env"
                first = seen[task.spec.id]
                problems.add(
                    doc.error(
                        (*loc, where),
                        f"duplicate task id {task.spec.id!r} (also tasks[{first}] on line "
                        f"{doc.lines[('tasks', first)]}); give one of them a distinct `id`",
                    )
                )
                continue
            if resolved.named:
                seen[task.spec.id] = index
            if resolved.sound and task.spec.id not in taken:
                taken.add(task.spec.id)
                tasks.append(task)
    return tasks
