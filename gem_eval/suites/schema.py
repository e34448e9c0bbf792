"""The YAML schema of suites and task files, and the one-line errors about them.

A suite file::

    name: smoke                      # optional; the file stem otherwise
    description: a few quick games
    defaults:                        # any task key below, plus `seed`
      limits: {max_turns: 8}
      samples: 2
      seed: 0
    tasks:
      - env: game:GuessTheNumber-v0-easy
        args: {max_turns: 4}
      - file: tasks/games/wordle-easy.yaml
        samples: 3                   # overrides the file and the defaults

A task file holds the keys of one task item (everything but ``file``). Every key is
optional here; what a resolved task must have (an env id) is checked by the loader.

The models are strict (YAML already gives typed values: ``"10"`` is not an integer) and
forbid unknown keys, so a typo is an error with a did-you-mean rather than a silent no-op.
Fields keep their defaults only for documentation: merging reads the keys that were set
(``model_dump(exclude_unset=True)``), so a task inherits what it does not set.
"""

from __future__ import annotations

import re
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gem_eval.core import MAX_SEED
from gem_eval.datasets import Dataset
from gem_eval.errors import UserError, did_you_mean
from gem_eval.judge import JudgeSpec
from gem_eval.records import SandboxSpec, Scorer

Loc = tuple[str | int, ...]
"""A path into a YAML document: mapping keys and list indices."""

TASK_ID_RE = re.compile(r"^[\w.:/-]+$")


class SuiteError(UserError):
    """A suite, task file or dataset that cannot be loaded; ``str`` is one line.

    Reads ``path:line: field: message``, leaving out the parts that are unknown.

    Attributes:
        path: The file at fault, as shown.
        line: Its 1-based line.
        field: The field, e.g. ``tasks[1].limits.max_turns``.
        message: The message without the location.
    """

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, field: str = ""
    ) -> None:
        self.path, self.line, self.field, self.message = path, line, field, message
        where = f"{path}:{line}: " if path and line else f"{path}: " if path else ""
        text = f"{where}{field}: {message}" if field else f"{where}{message}"
        super().__init__(" ".join(text.split()))  # one line, whatever the message held


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Limits(_Strict):
    """``limits:``; ``null`` removes a limit set by the defaults."""

    max_turns: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_time_s: float | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, ge=0)


class Generation(_Strict):
    """``generation:``; provider-specific arguments go under ``extra``."""

    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    reasoning_effort: str | None = None
    stop: str | list[str] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Sandbox(SandboxSpec):
    """``sandbox:`` (see :class:`gem_eval.records.SandboxSpec`).

    For an ordinary task this is its sandbox. A terminal or MCP task brings its own:
    there ``network``, ``memory``, ``cpus``, ``pids`` and ``user`` are a policy that may
    only tighten it (:mod:`gem_eval.sandbox.policy`), and ``max_sandboxes``,
    ``output_limit`` and ``image_map`` apply as they are. Only the keys written count
    (the loader keeps them: ``model_fields_set``), never the defaults.
    """

    model_config = ConfigDict(extra="forbid", strict=True)


class Judge(JudgeSpec):
    """``judge:``: the judge model and rubric of ``scorer: judge`` (see
    :class:`gem_eval.judge.JudgeSpec`); a layer's ``judge`` replaces a lower one's."""

    model_config = ConfigDict(extra="forbid", strict=True)


class TaskFields(_Strict):
    """The keys a task sets and the suite's ``defaults`` default.

    ``tools`` entries are a tool name or ``{name: NAME, setting: value, ...}``; the
    loader checks the names and settings.
    """

    tools: list[str | dict[str, Any]] = Field(default_factory=list)
    sandbox: Sandbox | None = None
    tool_mode: Literal["native", "text"] = "native"
    limits: Limits = Field(default_factory=Limits)
    epochs: int = Field(default=1, ge=1)
    samples: int = Field(default=1, ge=1)
    system_prompt: str | None = None
    scorer: Scorer = "success"
    agent: str = "gem-eval"
    agent_max_turns: int | None = Field(default=None, ge=1)
    judge: Judge | None = None
    gamma: float = Field(default=1.0, ge=0, le=1)
    generation: Generation = Field(default_factory=Generation)
    category: str | None = None
    tags: list[str] = Field(default_factory=list)


class Defaults(TaskFields):
    """``defaults:``: task keys, plus the suite's base ``seed``."""

    seed: int | None = Field(default=None, ge=0, le=MAX_SEED)


class TaskFile(TaskFields):
    """A task file (``tasks/...yaml``), and the body of a task item."""

    id: str | None = None
    env: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    dataset: Dataset | None = None

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str | None) -> str | None:
        if value is not None and not TASK_ID_RE.match(value):
            raise ValueError("a task id holds letters, digits and . : / - _ only")
        return value


class TaskItem(TaskFile):
    """One item of a suite's ``tasks:`` list."""

    file: str | None = None


class PriceEntry(_Strict):
    """A model's ``price:``, in USD per million tokens (see
    :class:`~gem_eval.records.TokenPrice`): ``{input: 0.15, output: 0.60}``."""

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)


class ModelEntry(_Strict):
    """One entry of a ``models:`` list (a suite's, or a ``--models`` file's): a model and
    how it is reached (see :class:`~gem_eval.records.ModelSpec` and
    :mod:`gem_eval.suites.models`)."""

    name: str = Field(min_length=1)
    base_url: str | None = None
    backend: str | None = None
    api_key_env: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_retries: int | None = Field(default=None, ge=0)
    max_connections: int | None = Field(default=None, ge=1)
    price: PriceEntry | None = None


class SuiteFile(_Strict):
    """A suite file (``suites/NAME.yaml``)."""

    name: str | None = None
    description: str = ""
    cache: bool = False
    """Runs of the suite use the response cache, as ``--cache`` does."""
    models: list[str | ModelEntry] = Field(default_factory=list)
    """The models a run plays when no ``--model`` is given."""
    defaults: Defaults = Field(default_factory=Defaults)
    tasks: list[TaskItem] = Field(min_length=1)


def format_loc(loc: Loc) -> str:
    """``("tasks", 1, "limits")`` -> ``tasks[1].limits``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


_MISSING = "required key is missing"


def describe(exc: ValidationError, model: type[BaseModel]) -> tuple[Loc, str]:
    """The first error of ``exc`` as ``(loc, message)``, with a hint where one helps.

    Args:
        exc: What ``model.model_validate`` raised.
        model: The model validated, to name the keys an unknown key could have meant.
    """
    places = describe_all(exc, model)
    # A misspelt key is both unknown and (if required) missing: show the one with a hint.
    loc, message = sorted(places, key=lambda p: p[1] == _MISSING)[0]
    if len(places) > 1:
        message += f" (+{len(places) - 1} more)"
    return loc, message


def describe_all(exc: ValidationError, model: type[BaseModel]) -> list[tuple[Loc, str]]:
    """Every error of ``exc`` as ``(loc, message)``, in the order of the document.

    One per place: a key missing where an unknown key stands beside it (the same key,
    misspelt) is left out, and so are the other branches of a union (``tools[0]``
    fails both as a string and as a mapping: one message).
    """
    # A value of a union with the type of one branch (a mapping, for `str | ModelEntry`) is
    # told what is wrong inside that branch, at its key, not that it is not a string.
    errors = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        place = _without_union_tags(loc, model)
        errors.append(
            (error, place, _branch_path(loc, model) if len(loc) > len(place) + 1 else place)
        )
    inside = {place for _, place, path in errors if path != place}
    unknown_in = {path[:-1] for e, _, path in errors if e["type"] == "extra_forbidden"}
    out: dict[Loc, str] = {}
    for error, place, path in errors:
        if error["type"] == "missing" and path[:-1] in unknown_in:
            continue
        if place in inside and path == place and error["type"].endswith("_type"):
            continue  # the other branch's type
        out.setdefault(path, _message({**error, "loc": path}, model)[1])
    return list(out.items())


def _message(error: Any, model: type[BaseModel]) -> tuple[Loc, str]:
    loc: Loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        known = _keys_at(model, loc[:-1])
        hint = did_you_mean(str(loc[-1]), known) or f" Expected one of: {', '.join(known)}."
        return loc, f"unknown key.{hint}"
    if error["type"] == "missing":
        return loc, _MISSING
    if error["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return loc, f"expected a mapping of keys (got {_show(error['input'])})"
    return loc, f"{error['msg']} (got {_show(error['input'])})"


def _without_union_tags(loc: Loc, model: type[BaseModel]) -> Loc:
    """``loc`` cut at a union of several types, where pydantic names the branch tried
    (``("tools", 0, "str")``), so that the branches of one value share a place."""
    current: Any = model
    for n, part in enumerate(loc):
        current = _unwrap(current)
        if get_origin(current) in (Union, types.UnionType):
            return loc[:n]
        if isinstance(part, int) or get_origin(current) is dict:
            args = get_args(current)
            current = args[-1] if args else None
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part)
            current = field.annotation if field else None
        else:
            current = None
    return loc


def _branch_path(loc: Loc, model: type[BaseModel]) -> Loc:
    """``loc`` without the names pydantic gives the branches of a union
    (``("models", 0, "ModelEntry", "price")`` -> ``("models", 0, "price")``)."""
    out: list[str | int] = []
    current: Any = model
    parts = list(loc)
    while parts:
        current = _unwrap(current)
        if get_origin(current) in (Union, types.UnionType):
            tag = parts.pop(0)
            current = next((a for a in get_args(current) if _branch_name(a) == tag), None)
            continue
        part = parts.pop(0)
        out.append(part)
        if isinstance(part, int) or get_origin(current) is dict:
            args = get_args(current)
            current = args[-1] if args else None
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            current = field.annotation if field else None
        else:
            current = None
    return tuple(out)


def _branch_name(annotation: Any) -> str:
    """The name pydantic gives a union's branch in an error's ``loc``."""
    return getattr(annotation, "__name__", None) or str(annotation)


def _show(value: Any) -> str:
    if isinstance(value, (str, int, float, bool)) or value is None:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(value).__name__}"


def _keys_at(model: type[BaseModel], loc: Loc) -> list[str]:
    """The field names of the model found at ``loc`` inside ``model`` (in a union, its
    one branch that is a model: ``str | ModelEntry``)."""
    current: Any = model
    for part in loc:
        current = _model_branch(_unwrap(current))
        if isinstance(part, int):
            args = get_args(current)
            current = args[0] if args else None
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part)
            current = field.annotation if field else None
        else:
            return []
    current = _model_branch(_unwrap(current))
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _model_branch(annotation: Any) -> Any:
    """A union's one branch that is a pydantic model; else ``annotation``."""
    if get_origin(annotation) not in (Union, types.UnionType):
        return annotation
    models = [a for a in get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
    return models[0] if len(models) == 1 else annotation


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation
