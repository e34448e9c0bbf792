"""Where a task's keys were written: the layers they come from (the suite's
``defaults``, a task file, the task item), lowest first, and the place of each key in
them, for messages (``file:line: field``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gem_eval.suites.schema import Loc, format_loc
from gem_eval.suites.suite import Origin
from gem_eval.suites.yaml_doc import YamlDoc


@dataclass(frozen=True)
class Layer:
    """The keys one place (defaults, task file, task item) set, and where it is."""

    doc: YamlDoc
    loc: Loc
    values: dict[str, Any]


def origin(layers: Sequence[Layer], *loc: str) -> tuple[YamlDoc, Loc]:
    """The doc and loc of the last layer that set ``loc`` (e.g. ``"args", "size"``)."""
    for layer in reversed(layers):
        if lookup(layer.values, loc) is not None:
            return layer.doc, (*layer.loc, *loc)
    return layers[-1].doc, layers[-1].loc


def lookup(values: Any, loc: Sequence[str]) -> Any:
    """``values[loc[0]][loc[1]]...``, or ``None`` where a key is missing."""
    for part in loc:
        values = values.get(part) if isinstance(values, dict) else None
    return values


def origins(layers: Sequence[Layer], merged: dict[str, Any]) -> dict[str, Origin]:
    """Where the keys a run's checks point at were written (see :class:`Origin`)."""
    keys: list[tuple[str, ...]] = [("env",), ("args",), ("dataset",), ("generation",)]
    keys += [("args", k) for k in merged.get("args", {})]
    keys += [("generation", k) for k in merged.get("generation", {})]
    keys += [("dataset", "fields", k) for k in (merged.get("dataset") or {}).get("fields") or {}]
    out = {}
    for key in keys:
        doc, loc = origin(layers, *key)
        out[".".join(key)] = Origin(doc.shown, doc.line(loc), format_loc(loc))
    return out
