"""One task item of a suite resolved: its layers merged, its task file, env id, args,
dataset, tools and sandbox looked up and checked.

A task's keys come from, lowest first: the schema's defaults, the suite's ``defaults``,
its task file (``file:``), the task item, and the run's ``overrides``. ``limits``,
``generation`` and ``args`` merge key by key, ``tags`` accumulate, any other key
replaces. A ``file:`` or dataset path is looked up relative to the file naming it, then
the bundled root (:func:`~gem_eval.bundled.bundled_root`: the checkout, or the installed
package's copy), then the working directory. The env id must be registered (its
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
from gem_eval.registration import accepted_kwargs, spec
from gem_eval.registry.fetch import FetchedDataset
from gem_eval.suites.problems import Problems, validated
from gem_eval.suites.registered import dataset_path
from gem_eval.suites.schema import Loc, SuiteError, TaskFile, format_loc
from gem_eval.suites.suite import Origin, SuiteTask, merge_layers
from gem_eval.suites.yaml_doc import YamlDoc, read_yaml


@dataclass(frozen=True)
class Layer:
    """The keys one place (defaults, task file, task item) set, and where it is."""

    doc: YamlDoc
    loc: Loc
    values: dict[str, Any]


def _origin(layers: Sequence[Layer], *loc: str) -> tuple[YamlDoc, Loc]:
    """The doc and loc of the last layer that set ``loc`` (e.g. ``"args", "size"``)."""
    for layer in reversed(layers):
        if _lookup(layer.values, loc) is not None:
            return layer.doc, (*layer.loc, *loc)
    return layers[-1].doc, layers[-1].loc


def _lookup(values: Any, loc: Sequence[str]) -> Any:
    """``values[loc[0]][loc[1]]...``, or ``None`` where a key is missing."""
    for part in loc:
        values = values.get(part) if isinstance(values, dict) else None
    return values


def resolve_item(
    doc: YamlDoc,
    loc: Loc,
    base: list[Layer],
    values: dict[str, Any],
    problems: Problems,
    stem: str | None = None,
    registry: str | None = None,
) -> list[SuiteTask]:
    """:func:`_resolve`, its problem added to ``problems`` (no task when there is one)."""
    try:
        return _resolve(doc, loc, base, values, problems, stem, registry)
    except UserError as exc:  # a SuiteError, or a missing optional package
        problems.add(exc)
        return []


def _resolve(
    doc: YamlDoc,
    loc: Loc,
    base: list[Layer],
    values: dict[str, Any],
    problems: Problems,
    stem: str | None = None,
    registry: str | None = None,
) -> list[SuiteTask]:
    """One task item: its file, env id, args, dataset and id, merged over ``base``;
    several tasks when the env expands its args (a directory of terminal tasks, or a
    registry dataset's ``NAME@VERSION`` looked up in ``registry``).

    ``stem`` names the task when nothing else does (a lone task file's stem). Mistakes
    in its task file's keys go to ``problems`` (all of them, when collecting).
    """
    layers = list(base)
    if "file" in values:
        path = _find_file(values.pop("file"), doc, loc)
        file_doc = read_yaml(path)
        task_file, _ = validated(file_doc, TaskFile, problems)
        if task_file is None:
            return []
        file_values = task_file.model_dump(exclude_unset=True)
        layers.append(Layer(file_doc, (), file_values))
        stem = path.stem
    layers.append(Layer(doc, loc, values))
    merged = merge_layers([layer.values for layer in layers])
    if "env" not in merged:
        where = layers[-2] if len(layers) > len(base) + 1 else layers[-1]  # file, else item
        raise where.doc.error(where.loc, "a task needs `env` (an env id) or `file` (a task file)")
    if merged.get("scorer") == "judge" and not merged.get("judge"):
        doc_at, loc_at = _origin(layers, "scorer")
        raise doc_at.error(loc_at, "scorer: judge needs a `judge:` (its model and rubric)")
    env_doc, env_loc = _origin(layers, "env")
    try:
        env_spec = spec(merged["env"])
    except UnknownEnvError as exc:
        raise env_doc.error(env_loc, str(exc)) from None
    try:
        factory = env_spec.load()
        accepted = accepted_kwargs(factory)
    except RegistrationError:  # e.g. an optional dependency is missing: checked at run time
        factory, accepted = None, None
    args: dict[str, Any] = {k: _interpolate(v) for k, v in merged.get("args", {}).items()}
    unknown = [key for key in args if accepted is not None and key not in accepted]
    for key in unknown:
        arg_doc, arg_loc = _origin(layers, "args", key)
        hint = did_you_mean(key, accepted or ())
        problems.add(arg_doc.error(arg_loc, f"{env_spec.id} takes no parameter {key!r}.{hint}"))
    if unknown:
        return []
    expand = getattr(factory, "expand", None)
    expanded = None
    fetched = None
    if expand is not None:
        args = _absolute_paths(args, [_origin(layers, "args")[0].path.parent, bundled_root()], True)
        fetched = _fetched(args, layers, registry)
        if fetched is not None:
            args = {**args, "path": str(fetched.root)}
        expanded = _expanded(expand, args, layers)
    if accepted is not None and "dataset" not in merged and expanded is None:
        _check_env_builds(env_spec.id, args, layers)
    task_id = merged.get("id") or stem or env_spec.id
    rows = None
    if "dataset" in merged:
        source = Dataset.model_validate(merged["dataset"])
        rows = _dataset_rows(layers, source, accepted, env_spec.id)
        if "id" not in merged and stem is None:
            task_id = source.path if dataset_format(source) == "hf" else Path(source.path).stem
    spec_values = {k: merged[k] for k in TaskSpec.model_fields if k in merged}
    spec_values.update(id=task_id, env_id=env_spec.id, env_kwargs=args)
    if "tools" in merged:
        spec_values["tools"] = _check_tools(layers, merged["tools"])
    if (merged.get("sandbox") or {}).get("build"):
        spec_values["sandbox"] = {**merged["sandbox"], "build": _build_dir(layers)}
    if (merged.get("sandbox") or {}).get("image_map"):  # targets may be build directories
        doc_dir = _origin(layers, "sandbox", "image_map")[0].path.parent
        image_map = _absolute_paths(merged["sandbox"]["image_map"], [doc_dir, bundled_root()], True)
        spec_values["sandbox"] = {
            **spec_values.get("sandbox", merged["sandbox"]),
            "image_map": image_map,
        }
    samples = merged.get("samples", 1)
    if rows is not None:
        samples = min(samples, len(rows)) if "samples" in merged else len(rows)
    task = SuiteTask(
        spec=TaskSpec.model_validate(spec_values),
        samples=samples,
        epochs=merged.get("epochs", 1),
        rows=rows,
        source=f"{doc.shown}:{doc.lines.get(loc, 1)}",
        origins=_origins(layers, merged),
        dataset=None if fetched is None else fetched.pin(),
    )
    if expanded is None:
        return [task]
    return [
        dataclasses.replace(
            task,
            spec=task.spec.model_copy(
                update={
                    "id": f"{task_id}/{item.name}",
                    "env_kwargs": item.args,
                    "category": task.spec.category or item.category,
                    "tags": list(dict.fromkeys([*task.spec.tags, *item.tags])),
                }
            ),
        )
        for item in expanded
    ]


def _origins(layers: Sequence[Layer], merged: dict[str, Any]) -> dict[str, Origin]:
    """Where the keys a run's checks point at were written (see :class:`Origin`)."""
    keys: list[tuple[str, ...]] = [("env",), ("args",), ("dataset",), ("generation",)]
    keys += [("args", k) for k in merged.get("args", {})]
    keys += [("generation", k) for k in merged.get("generation", {})]
    keys += [("dataset", "fields", k) for k in (merged.get("dataset") or {}).get("fields") or {}]
    out = {}
    for key in keys:
        doc, loc = _origin(layers, *key)
        out[".".join(key)] = Origin(doc.shown, doc.line(loc), format_loc(loc))
    return out


def _fetched(
    args: dict[str, Any], layers: Sequence[Layer], registry: str | None
) -> FetchedDataset | None:
    """The registry dataset ``args.path`` names, fetched (``None``: it names none)."""
    try:
        return dataset_path(args.get("path"), registry)
    except RegistryError as exc:
        doc, loc = _origin(layers, "args", "path")
        raise doc.error(loc, str(exc)) from None


def _expanded(expand: Any, args: dict[str, Any], layers: Sequence[Layer]) -> list[Any] | None:
    """The env's expansion of ``args`` into several tasks (``None``: one task)."""
    try:
        result: list[Any] | None = expand(args)
    except TaskFormatError:  # names the task's own file and line
        raise
    except UserError as exc:
        doc, loc = _origin(layers, "args")
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
        doc, loc = _origin(layers, *where)
        raise doc.error(loc, failure.message)


def _check_tools(layers: Sequence[Layer], entries: list[Any]) -> list[dict[str, Any]]:
    """Each ``tools:`` entry as ``{name, settings}``, its kit built once to check it.

    Relative paths in settings (a corpus, a server script) are made absolute against the
    file that names them, then the bundled root, so a run works from any directory.
    """
    from gem_eval.records import ToolSpec
    from gem_eval.tools.kit import build_kit

    doc, loc = _origin(layers, "tools")
    out = []
    for n, entry in enumerate(entries):
        if isinstance(entry, dict) and not isinstance(entry.get("name"), str):
            raise doc.error((*loc, n), "a tool entry needs `name` (e.g. {name: search, ...})")
        tool = ToolSpec.model_validate(entry)
        tool.settings = _absolute_paths(tool.settings, [doc.path.parent, bundled_root()])
        try:
            build_kit(tool.name, tool.settings)
        except UserError as exc:
            raise doc.error((*loc, n), str(exc)) from None
        out.append(tool.model_dump())
    return out


def _build_dir(layers: Sequence[Layer]) -> str:
    """``sandbox.build`` as an absolute directory holding a Dockerfile."""
    doc, loc = _origin(layers, "sandbox", "build")
    name = str(_lookup(merge_layers([layer.values for layer in layers]), ("sandbox", "build")))
    for base in (doc.path.parent, bundled_root(), Path.cwd()):
        if (base / name / "Dockerfile").is_file():
            return str((base / name).resolve())
    raise doc.error(loc, f"no Dockerfile in {name!r} (relative to {doc.shown})")


def _absolute_paths(value: Any, bases: Sequence[Path], bare: bool = False) -> Any:
    """Strings naming an existing path relative to one of ``bases``, made absolute.
    Only strings with a ``/`` are tried unless ``bare`` (values that are paths by
    definition: a task directory, an image-map build directory)."""
    if isinstance(value, dict):
        return {k: _absolute_paths(v, bases, bare) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute_paths(v, bases, bare) for v in value]
    if (
        isinstance(value, str)
        and value
        and ("/" in value or bare)
        and not value.startswith(("/", "-", "http"))
    ):
        for base in bases:
            if (base / value).exists():
                return str((base / value).resolve())
    return value


def _find_file(name: str, doc: YamlDoc, loc: Loc) -> Path:
    """A task file named in ``doc``: relative to it, then the bundled root, then the cwd."""
    relative = Path(name)
    bases = [Path("/")] if relative.is_absolute() else [doc.path.parent, bundled_root(), Path.cwd()]
    for base in bases:
        if (base / relative).is_file():
            return base / relative
    dirs = [(b / relative).parent for b in bases]
    nearby = {p.name for d in dirs if d.is_dir() for p in d.iterdir()}
    hint = did_you_mean(relative.name, nearby)
    raise doc.error((*loc, "file"), f"task file {name!r} not found{'.' + hint if hint else ''}")


def _dataset_rows(
    layers: Sequence[Layer], source: Dataset, accepted: set[str] | None, env_id: str
) -> list[Row]:
    ds_doc, ds_loc = _origin(layers, "dataset")
    for name in source.fields or ():
        if accepted is not None and name not in accepted:
            hint = did_you_mean(name, accepted)
            message = f"{env_id} takes no parameter {name!r} (fields: {{parameter: column}}).{hint}"
            raise ds_doc.error((*ds_loc, "fields", name), message)
    try:
        rows = load_rows(source, base_dirs=[ds_doc.path.parent, bundled_root(), Path.cwd()])
    except DatasetError as exc:
        if exc.path:  # located in the data file itself
            raise SuiteError(exc.message, path=exc.path, line=exc.line) from None
        where = ("fields", exc.key) if exc.key else ("path",)
        raise ds_doc.error((*ds_loc, *where), exc.message) from None
    if source.fields is None and accepted is not None:  # each row's columns go to the env
        columns = [c for c in dict.fromkeys(c for row in rows for c in row) if c not in accepted]
        if columns:
            shown = ", ".join(repr(c) for c in columns[:5]) + (" ..." if len(columns) > 5 else "")
            mapped = {c: c for c in rows[0] if c in accepted}  # a guess at the mapping
            mapped |= {m[0]: c for c in columns if (m := closest(c, accepted, 1))}
            pairs = ", ".join(f"{k}: {v}" for k, v in mapped.items())
            hint = f" Perhaps `fields: {{{pairs}}}`?" if pairs else ""
            raise ds_doc.error(
                ds_loc,
                f"{env_id} takes no parameter {shown} (column{'s' if len(columns) > 1 else ''} "
                f"of {source.path}): without `fields:` every column is passed to the env; "
                f"map the ones it takes with `fields: {{parameter: column}}`.{hint}",
            )
    return rows
