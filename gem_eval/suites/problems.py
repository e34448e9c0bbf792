"""The problems of a suite file: raised at the first (a run loading its suite), or
all collected (``gem-eval suites validate`` reports every mistake in a file).

Collecting goes on past a mistake: the key at fault is reported and left out, and the
rest of the file is checked as far as it still means what the file says.

- A key no task's env depends on (``generation``, ``limits``, ``samples``, ``tags`` ...;
  at the top, ``name``, ``description``, ``cache``, ``models``) is left out, and that is
  all.
- A key that decides which env a task builds or how (``env``, ``file``, ``args``,
  ``dataset``, ``id``, ``judge``) is left out and the task marked *unsure* of it: its
  other keys are still resolved and checked, but not what the key left out could change
  (a task unsure of its ``args`` or ``dataset`` is not built, one unsure of its ``id``
  is not compared with the others; see :class:`Validated`). A mistake in ``defaults``
  makes every task unsure alike.
- An unknown key is left out too; the task is unsure of the key it most resembles
  (``arg``: ``args``), or of all of them when it resembles none. One at the top makes
  every task unsure of its ``judge`` when it may have been ``defaults``.
- A task item that is not a mapping is set aside; a ``tasks`` that is not a list of
  them leaves no task to check, but the defaults and models are still checked.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from gem_eval.errors import UserError, closest
from gem_eval.suites.schema import Loc, SuiteError, SuiteFile, TaskItem
from gem_eval.suites.yaml_doc import YamlDoc

_M = TypeVar("_M", bound=BaseModel)

_SIDE_KEYS = frozenset(
    {
        "tools",
        "sandbox",
        "tool_mode",
        "limits",
        "epochs",
        "samples",
        "system_prompt",
        "scorer",
        "gamma",
        "generation",
        "category",
        "tags",
        "seed",
    }
)
"""Task keys whose mistake leaves the task's env as written: reported, then left out."""

SHAPING_KEYS = frozenset({"env", "file", "args", "dataset", "id", "judge"})
"""Task keys that decide which env a task builds, or how it is named or scored: a
mistake in one leaves the task unsure of it (any other key's is just left out)."""


@dataclass(frozen=True)
class Problem:
    """One mistake in a suite or task file; ``str`` is ``file:line: field: message``.

    Attributes:
        path: The file at fault, as shown (``None``: no file, e.g. an unknown suite).
        line: Its 1-based line.
        field: The field, e.g. ``tasks[1].args.max_number``.
        message: What is wrong, without the location.
    """

    path: str | None
    line: int | None
    field: str
    message: str

    @classmethod
    def of(cls, exc: UserError) -> Problem:
        """A :class:`SuiteError` as a problem; any other user error as a bare message."""
        if isinstance(exc, SuiteError):
            return cls(exc.path, exc.line, exc.field, exc.message)
        return cls(None, None, "", str(exc))

    def error(self) -> SuiteError:
        """The problem as the exception :func:`~gem_eval.suites.load_suite` raises."""
        return SuiteError(self.message, path=self.path, line=self.line, field=self.field)

    def __str__(self) -> str:
        return str(self.error())


class Problems:
    """Where a loader's problems go: raised at once, or kept (``collect=True``)."""

    def __init__(self, collect: bool = False) -> None:
        self.collect = collect
        self.items: list[Problem] = []

    def add(self, exc: UserError) -> None:
        """Keep ``exc`` as a problem; raise it unless collecting."""
        if not self.collect:
            raise exc
        self.items.append(Problem.of(exc))


@dataclass(frozen=True)
class Validated(Generic[_M]):
    """A file validated as far as its mistakes allow.

    Attributes:
        value: The file as the model, the keys at fault left out; ``None`` when nothing
            in it can be checked as the file means it. A suite file without a task to
            check has ``tasks == []``.
        kept: The indices of the task items in ``value.tasks`` (a suite file).
        unsure: The :data:`SHAPING_KEYS` a mistake left out of every task of the file
            (a task file's own, or a suite file's ``defaults``).
        unsure_items: Those a mistake left out of one task item, by its index.
    """

    value: _M | None
    kept: list[int] = field(default_factory=list)
    unsure: frozenset[str] = frozenset()
    unsure_items: dict[int, frozenset[str]] = field(default_factory=dict)

    def unsure_of(self, index: int) -> frozenset[str]:
        """What the task item ``index`` is unsure of, its own and the file's."""
        return self.unsure | self.unsure_items.get(index, frozenset())


def validated(doc: YamlDoc, model: type[_M], problems: Problems) -> Validated[_M]:
    """``doc`` as ``model`` (a suite file with ``tasks``, or a task file).

    Raises the first mistake unless collecting. Collecting, every mistake is added to
    ``problems``, and what is left once the keys at fault are set aside (see the module
    docstring) is returned.
    """
    items = "tasks" in model.model_fields
    data = doc.data
    every = list(range(len(data["tasks"]))) if items and _has_list(data) else []
    if not problems.collect:
        return Validated(doc.validate(model), every)
    errors = doc.errors(model)
    if not errors:
        return Validated(model.model_validate(data), every)
    data = copy.deepcopy(data)
    dropped: set[int] = set()
    unsure: set[str] = set()
    unsure_items: dict[int, set[str]] = {}
    for loc, exc in errors:
        problems.add(exc)
        if not loc:  # not a mapping at all
            return Validated(None)
        holder = _holder(loc, items)
        key = loc[len(holder)] if holder is not None and len(loc) > len(holder) else None
        if holder is None:  # the top of a suite file: tasks, or a key no task inherits
            data.pop(loc[0], None)
            if loc[0] not in model.model_fields:
                unsure |= _top_meaning(str(loc[0]))
        elif key is None and holder[:1] == ("tasks",):  # an item that is not a mapping
            dropped.add(int(holder[1]))
        elif key is None and holder == ("defaults",):  # not a mapping: it set nothing
            data.pop("defaults", None)
        else:
            _at(data, holder).pop(key, None)
            if key in _SIDE_KEYS:
                continue
            if holder[:1] == ("tasks",):
                unsure_items.setdefault(int(holder[1]), set()).update(_meaning(str(key)))
            else:
                unsure.update(_meaning(str(key)))
    kept = [i for i in every if i not in dropped]
    if items:
        data["tasks"] = [data["tasks"][i] for i in kept]
    try:  # an empty `tasks` would not validate: the rest is validated with a stand-in
        value = model.model_validate({**data, "tasks": [{}]} if items and not kept else data)
    except ValidationError:  # what was set aside left something else wrong: stop here
        return Validated(None)
    if items and not kept:
        value = value.model_copy(update={"tasks": []})
    return Validated(
        value,
        kept,
        frozenset(unsure),
        {i: frozenset(keys) for i, keys in unsure_items.items() if i in kept},
    )


def _meaning(key: str) -> frozenset[str]:
    """The task keys an unknown or faulty ``key`` may have set, of :data:`SHAPING_KEYS`."""
    if key not in TaskItem.model_fields:
        near = closest(key, TaskItem.model_fields, 1)
        if not near:
            return SHAPING_KEYS
        key = near[0]
    return SHAPING_KEYS & {key}


def _top_meaning(key: str) -> frozenset[str]:
    """What every task is unsure of, once an unknown top-level ``key`` is left out: its
    ``judge``, when the key may have been ``defaults`` (what tasks inherit)."""
    near = closest(key, SuiteFile.model_fields, 1)
    return frozenset({"judge"}) if near in ([], ["defaults"]) else frozenset()


def _has_list(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("tasks"), list)


def _holder(loc: Loc, items: bool) -> Loc | None:
    """The mapping of task keys ``loc`` lies in: a task item, ``defaults``, or (a task
    file) the whole file; ``None`` for the top of a suite file."""
    if not items:
        return ()
    if loc[:1] == ("defaults",):
        return ("defaults",)
    if len(loc) >= 2 and loc[0] == "tasks" and isinstance(loc[1], int):
        return loc[:2]
    return None


def _at(data: Any, loc: Loc) -> Any:
    for part in loc:
        data = data[part]
    return data if isinstance(data, dict) else {}
