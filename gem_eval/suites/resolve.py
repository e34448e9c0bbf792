"""One task item of a suite resolved: its layers merged, its task file, env id, args,
dataset, tools and sandbox looked up and checked.

A task's keys come from, lowest first: the schema's defaults, the suite's ``defaults``,
its task file (``file:``), the task item, and the run's ``overrides``. ``limits``,
``generation`` and ``args`` merge key by key, ``tags`` accumulate, any other key
replaces (:mod:`gem_eval.suites.layers` keeps where each was written). A ``file:`` or
dataset path is looked up relative to the file naming it, then the bundled root, then
the working directory (:mod:`gem_eval.suites.paths`). The env id must be registered (its
canonical spelling is kept) and must take every ``args`` key (and every ``fields`` name:
the env gets a sample's fields at make time). A task's id is its ``id``, else the task
file's stem, else the dataset's, else the env id.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_eval.bundled import bundled_root
from gem_eval.datasets import Dataset, DatasetError, Row, dataset_format, load_rows
from gem_eval.errors import (
    RegistrationError,
    RegistryError,
    TaskFormatError,
    UnknownEnvError,
    UserError,
    closest,
    did_you_mean,
)
from gem_eval.records import TaskSpec
from gem_eval.registration import EnvSpec, accepted_kwargs, spec
from gem_eval.registry.fetch import FetchedDataset
from gem_eval.suites.layers import Layer, origin, origins
from gem_eval.suites.paths import absolute_paths, build_dir, find_file
from gem_eval.suites.problems import Problems, validated
from gem_eval.suites.registered import dataset_path
from gem_eval.suites.schema import Loc, SuiteError, TaskFile
from gem_eval.suites.suite import SuiteTask, merge_layers
from gem_eval.suites.yaml_doc import YamlDoc, read_yaml


@dataclass(frozen=True)
class Resolved:
    """What a task item resolves to.

    Attributes:
        tasks: Its tasks (several when the env expands its args); none when its env, or
            the env's expansion, could not be resolved.
        sound: Nothing that shapes its envs was at fault or left out by a mistake: a
            check may build them (:func:`~gem_eval.suites.check.check_suite`).
        named: Its ids are the ones the file means (no ``id``, ``file`` or ``dataset``
            was left out by a mistake), to be compared with the other tasks'.
    """

    tasks: list[SuiteTask]
    sound: bool = True
    named: bool = True


def resolve_item(
    doc: YamlDoc,
    loc: Loc,
    base: list[Layer],
    values: dict[str, Any],
    problems: Problems,
    unsure: frozenset[str] = frozenset(),
    stem: str | None = None,
    registry: str | None = None,
) -> Resolved:
    """One task item: its file, env id, args, dataset and id, merged over ``base``;
    several tasks when the env expands its args (a directory of terminal tasks, or a
    registry dataset's ``NAME@VERSION`` looked up in ``registry``).

    Every mistake goes to ``problems`` (the first is raised unless collecting); what a
    mistake does not touch is still checked.

    Args:
        doc, loc: The file and place of the item.
        base: The layers below it (the suite's ``defaults``).
        values: Its keys.
        problems: Where its mistakes go.
        unsure: The task keys a mistake already left out (see
            :class:`~gem_eval.suites.problems.Validated`): what they could change is
            not checked.
        stem: Names the task when nothing else does (a lone task file's stem).
        registry: Where ``NAME@VERSION`` datasets are looked up.
    """
    try:
        return _resolve(doc, loc, base, dict(values), problems, set(unsure), stem, registry)
    except UserError as exc:  # e.g. a missing optional package
        problems.add(exc)
        return Resolved([], sound=False, named=False)


def _resolve(
    doc: YamlDoc,
    loc: Loc,
    base: list[Layer],
    values: dict[str, Any],
    problems: Problems,
    unsure: set[str],
    stem: str | None,
    registry: str | None,
) -> Resolved:
    layers = list(base)
    if values.get("file") is None:
        values.pop("file", None)  # `file: null` names no task file
    if "file" in values:
        found = _task_file(values.pop("file"), doc, loc, problems)
        if found is None:
            unsure.add("file")
        else:
            layers.append(found[0])
            unsure |= found[1]
            stem = found[0].doc.path.stem
    layers.append(Layer(doc, loc, values))
    merged = merge_layers([layer.values for layer in layers])
    if merged.get("dataset") is None:
        merged.pop("dataset", None)  # `dataset: null`: no dataset, as `limits:`'s nulls
    sound = not unsure & {"env", "file", "args", "dataset"}
    named = not unsure & {"id", "file", "dataset"}
    if "env" not in merged and not unsure & {"env", "file"}:
        where = layers[-2] if len(layers) > len(base) + 1 else layers[-1]  # file, else item
        problems.add(
            where.doc.error(where.loc, "a task needs `env` (an env id) or `file` (a task file)")
        )
    if merged.get("scorer") == "judge" and not merged.get("judge") and "judge" not in unsure:
        doc_at, loc_at = origin(layers, "scorer")
        problems.add(doc_at.error(loc_at, "scorer: judge needs a `judge:` (its model and rubric)"))
    env_spec, factory, accepted = _env(layers, merged, problems)
    env_id = env_spec.id if env_spec is not None else str(merged.get("env"))
    args: dict[str, Any] = {k: _interpolate(v) for k, v in merged.get("args", {}).items()}
    unknown = [key for key in args if accepted is not None and key not in accepted]
    for key in unknown:
        arg_doc, arg_loc = origin(layers, "args", key)
        hint = did_you_mean(key, accepted or ())
        problems.add(arg_doc.error(arg_loc, f"{env_id} takes no parameter {key!r}.{hint}"))
    sound = sound and env_spec is not None and not unknown
    expand = getattr(factory, "expand", None)
    expanded = None
    fetched = None
    if expand is not None and sound:
        args = absolute_paths(args, [origin(layers, "args")[0].path.parent, bundled_root()], True)
        try:
            fetched = _fetched(args, layers, registry)
            if fetched is not None:
                args = {**args, "path": str(fetched.root)}
            expanded = _expanded(expand, args, layers)
        except UserError as exc:
            problems.add(exc)
            sound = False
    unexpanded = expand is not None and not sound  # its ids and args: the expansion's
    named = named and not unexpanded
    if sound and accepted is not None and "dataset" not in merged and expanded is None:
        try:
            _check_env_builds(env_id, args, layers)
        except SuiteError as exc:
            problems.add(exc)
            sound = False
    task_id = merged.get("id") or stem or env_id
    rows = None
    if "dataset" in merged:
        source = Dataset.model_validate(merged["dataset"])
        rows = _dataset_rows(layers, source, accepted, env_id, problems)
        sound = sound and rows is not None
        if "id" not in merged and stem is None:
            task_id = source.path if dataset_format(source) == "hf" else Path(source.path).stem
    spec_values = {k: merged[k] for k in TaskSpec.model_fields if k in merged}
    spec_values.update(id=task_id, env_id=env_id, env_kwargs=args)
    if "tools" in merged:
        spec_values["tools"] = _check_tools(layers, merged["tools"], problems)
    if merged.get("sandbox"):
        spec_values["sandbox"] = _sandbox(layers, merged["sandbox"], problems)
    if env_spec is None or unexpanded:
        return Resolved([], sound=False, named=False)
    samples = merged.get("samples", 1)
    if rows is not None:
        samples = min(samples, len(rows)) if "samples" in merged else len(rows)
    task = SuiteTask(
        spec=TaskSpec.model_validate(spec_values),
        samples=samples,
        epochs=merged.get("epochs", 1),
        rows=rows,
        source=f"{doc.shown}:{doc.lines.get(loc, 1)}",
        origins=origins(layers, merged),
        dataset=None if fetched is None else fetched.pin(),
    )
    if expanded is None:
        return Resolved([task], sound, named)
    return Resolved([_expansion_task(task, item) for item in expanded], sound, named)


def _env(
    layers: Sequence[Layer], merged: dict[str, Any], problems: Problems
) -> tuple[EnvSpec | None, Any, set[str] | None]:
    """The task's env (``None``: none, or unknown: a problem), its factory and the
    parameters it takes (``None``: cannot tell)."""
    if "env" not in merged:
        return None, None, None
    if not isinstance(merged["env"], str) or not merged["env"].strip():
        env_doc, env_loc = origin(layers, "env")
        problems.add(
            env_doc.error(env_loc, "env: needs an env id (`gem-eval envs list` lists them)")
        )
        return None, None, None
    try:
        env_spec = spec(merged["env"])
    except UnknownEnvError as exc:
        env_doc, env_loc = origin(layers, "env")
        problems.add(env_doc.error(env_loc, str(exc)))
        return None, None, None
    try:
        factory = env_spec.load()
        return env_spec, factory, accepted_kwargs(factory)
    except RegistrationError:  # e.g. an optional dependency is missing: checked at run time
        return env_spec, None, None


def _expansion_task(task: SuiteTask, item: Any) -> SuiteTask:
    """One of the tasks the env expands ``task`` into (``<task id>/<item name>``)."""
    return dataclasses.replace(
        task,
        spec=task.spec.model_copy(
            update={
                "id": f"{task.spec.id}/{item.name}",
                "env_kwargs": item.args,
                "category": task.spec.category or item.category,
                "tags": list(dict.fromkeys([*task.spec.tags, *item.tags])),
            }
        ),
    )


def _sandbox(
    layers: Sequence[Layer], sandbox: dict[str, Any], problems: Problems
) -> dict[str, Any]:
    """``sandbox`` with its build directory and image-map targets (which may be build
    directories) made absolute; a build directory without a Dockerfile is a problem."""
    if sandbox.get("build"):
        try:
            sandbox = {**sandbox, "build": build_dir(layers)}
        except SuiteError as exc:
            problems.add(exc)
    if sandbox.get("image_map"):
        doc_dir = origin(layers, "sandbox", "image_map")[0].path.parent
        image_map = absolute_paths(sandbox["image_map"], [doc_dir, bundled_root()], True)
        sandbox = {**sandbox, "image_map": image_map}
    return sandbox


def _task_file(
    name: str, doc: YamlDoc, loc: Loc, problems: Problems
) -> tuple[Layer, frozenset[str]] | None:
    """The layer of the task file ``name`` that ``doc`` names at ``loc``, and the task
    keys its mistakes left out; ``None`` when it cannot be found, read or used."""
    try:
        file_doc = read_yaml(find_file(name, doc, loc), collect=problems.collect)
    except SuiteError as exc:
        problems.add(exc)
        return None
    for duplicate in file_doc.duplicates:
        problems.add(duplicate)
    task_file = validated(file_doc, TaskFile, problems)
    if task_file.value is None:
        return None
    return Layer(file_doc, (), task_file.value.model_dump(exclude_unset=True)), task_file.unsure


def _fetched(
    args: dict[str, Any], layers: Sequence[Layer], registry: str | None
) -> FetchedDataset | None:
    """The registry dataset ``args.path`` names, fetched (``None``: it names none)."""
    try:
        return dataset_path(args.get("path"), registry)
    except RegistryError as exc:
        doc, loc = origin(layers, "args", "path")
        raise doc.error(loc, str(exc)) from None


def _expanded(expand: Any, args: dict[str, Any], layers: Sequence[Layer]) -> list[Any] | None:
    """The env's expansion of ``args`` into several tasks (``None``: one task)."""
    try:
        result: list[Any] | None = expand(args)
    except TaskFormatError:  # names the task's own file and line
        raise
    except UserError as exc:
        doc, loc = origin(layers, "args")
        raise doc.error(loc, str(exc)) from None
    return result


_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def _interpolate(value: Any) -> Any:
    """``${NAME}`` and ``${NAME:-default}`` in an ``args`` string, from the environment
    (a user points a suite at their own task directory without editing it)."""
    if not isinstance(value, str):
        return value
    return _VARIABLE.sub(lambda m: os.environ.get(m.group(1)) or (m.group(2) or ""), value)


def _check_env_builds(env_id: str, args: dict[str, Any], layers: Sequence[Layer]) -> None:
    """Build the env once, so that a bad value (``max_turns: 0``) is reported here, with
    its line, rather than failing every episode of the run. The constructor runs, and an
    env's ``check_settings()`` when it has one (a game sets up a board; a reasoning-gym
    env builds its dataset). A dataset task's envs are built per row by
    :func:`~gem_eval.suites.check.check_suite`."""
    from gem_eval.suites.check import blamed_key, build_failure

    failure = build_failure(env_id, args)
    if failure is not None:
        key = blamed_key(failure.message, list(args))
        where = ("args", key) if key else ("args",) if failure.arguments else ("env",)
        doc, loc = origin(layers, *where)
        raise doc.error(loc, failure.message)


def _check_tools(
    layers: Sequence[Layer], entries: list[Any], problems: Problems
) -> list[dict[str, Any]]:
    """Each ``tools:`` entry as ``{name, settings}``, its kit built once to check it (an
    entry that fails is a problem, and left out).

    Relative paths in settings (a corpus, a server script) are made absolute against the
    file that names them, then the bundled root, so a run works from any directory.
    """
    from gem_eval.records import ToolSpec
    from gem_eval.tools.kit import build_kit

    doc, loc = origin(layers, "tools")
    out = []
    for n, entry in enumerate(entries):
        if isinstance(entry, dict) and not isinstance(entry.get("name"), str):
            message = "a tool entry needs `name` (e.g. {name: search, ...})"
            problems.add(doc.error((*loc, n), message))
            continue
        tool = ToolSpec.model_validate(entry)
        tool.settings = absolute_paths(tool.settings, [doc.path.parent, bundled_root()])
        try:
            build_kit(tool.name, tool.settings)
        except UserError as exc:
            problems.add(doc.error((*loc, n), str(exc)))
            continue
        out.append(tool.model_dump())
    return out


def _dataset_rows(
    layers: Sequence[Layer],
    source: Dataset,
    accepted: set[str] | None,
    env_id: str,
    problems: Problems,
) -> list[Row] | None:
    """The rows of ``source``; ``None`` when a problem was found (``fields`` the env
    does not take are each one, and the rows are still read)."""
    ds_doc, ds_loc = origin(layers, "dataset")
    refused = [n for n in source.fields or () if accepted is not None and n not in accepted]
    for name in refused:
        hint = did_you_mean(name, accepted or ())
        message = f"{env_id} takes no parameter {name!r} (fields: {{parameter: column}}).{hint}"
        problems.add(ds_doc.error((*ds_loc, "fields", name), message))
    try:
        rows = load_rows(source, base_dirs=[ds_doc.path.parent, bundled_root(), Path.cwd()])
    except DatasetError as exc:
        if exc.path:  # located in the data file itself
            problems.add(SuiteError(exc.message, path=exc.path, line=exc.line))
        else:
            where = ("fields", exc.key) if exc.key else ("path",)
            problems.add(ds_doc.error((*ds_loc, *where), exc.message))
        return None
    if source.fields is None and accepted is not None:  # each row's columns go to the env
        columns = [c for c in dict.fromkeys(c for row in rows for c in row) if c not in accepted]
        if columns:
            shown = ", ".join(repr(c) for c in columns[:5]) + (" ..." if len(columns) > 5 else "")
            mapped = {c: c for c in rows[0] if c in accepted}  # a guess at the mapping
            mapped |= {m[0]: c for c in columns if (m := closest(c, accepted, 1))}
            pairs = ", ".join(f"{k}: {v}" for k, v in mapped.items())
            hint = f" Perhaps `fields: {{{pairs}}}`?" if pairs else ""
            problems.add(
                ds_doc.error(
                    ds_loc,
                    f"{env_id} takes no parameter {shown} (column"
                    f"{'s' if len(columns) > 1 else ''} of {source.path}): without `fields:` "
                    "every column is passed to the env; map the ones it takes with "
                    f"`fields: {{parameter: column}}`.{hint}",
                )
            )
            return None
    return None if refused else rows
