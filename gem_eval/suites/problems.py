"""The problems of a suite file: raised at the first (a run loading its suite), or
all collected (``gem-eval suites validate`` reports every mistake in a file).

Collecting goes on past a mistake only where the rest still means what the file says.
A mistake in a key that does not change which env a task builds or how
(``generation``, ``limits``, ``samples``, ``tags`` ...) is reported and the key left
out; a mistake in ``env``, ``file``, ``args``, ``dataset``, ``id`` or ``judge`` sets
its task item aside (the other items are still resolved and checked); one in such a
key of ``defaults``, or in ``tasks`` itself, stops there, since every task depends on
it. ``name``, ``description``, ``cache`` and ``models`` are left out like ``tags``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gem_eval.errors import UserError
from gem_eval.suites.schema import Loc, SuiteError
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

_TOP_SIDE_KEYS = frozenset({"name", "description", "cache", "models"})
"""Keys of a suite file that no task depends on: reported, then left out."""


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


def validated(doc: YamlDoc, model: type[_M], problems: Problems) -> tuple[_M | None, list[int]]:
    """``doc`` as ``model`` (a suite file with ``tasks``, or a task file), and the
    indices of the task items kept.

    Raises the first mistake unless collecting. Collecting, every mistake is added to
    ``problems``, and what is left once they are set aside (see the module docstring)
    is returned; ``None`` when nothing can be resolved as the file means it.
    """
    items = "tasks" in model.model_fields
    data = doc.data
    every = list(range(len(data["tasks"]))) if items and _has_list(data) else []
    if not problems.collect:
        return doc.validate(model), every
    errors = doc.errors(model)
    if not errors:
        return model.model_validate(data), every
    data = copy.deepcopy(data)
    dropped: set[int] = set()
    whole = False
    for loc, exc in errors:
        problems.add(exc)
        holder = _holder(loc, items)
        key = loc[len(holder)] if holder is not None and len(loc) > len(holder) else None
        if holder is not None and key in _SIDE_KEYS:
            _at(data, holder).pop(key, None)
        elif holder is None and items and loc[:1] and loc[0] in _TOP_SIDE_KEYS:
            data.pop(loc[0], None)
        elif holder is not None and holder[:1] == ("tasks",):
            dropped.add(int(holder[1]))
        else:
            whole = True
    kept = [i for i in every if i not in dropped]
    if whole or (items and not kept):
        return None, []
    if items:
        data["tasks"] = [data["tasks"][i] for i in kept]
    try:
        return model.model_validate(data), kept
    except ValidationError:  # what was set aside left something else wrong: stop here
        return None, []


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
