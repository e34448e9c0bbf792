"""``YamlDoc``: a YAML file's data with the line of every key and list item, so that
errors about a suite or task file name the file and line (``file:line: field: ...``).

A key written twice in one mapping is a mistake (PyYAML would silently keep the last
value); a key written over a merged mapping (``<<: *base``) is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from gem_eval.suites.schema import Loc, SuiteError, describe, describe_all, format_loc

_M = TypeVar("_M", bound=BaseModel)

_MERGE = "tag:yaml.org,2002:merge"
"""The tag of ``<<``, which merges a mapping in (and may be written more than once)."""


@dataclass(frozen=True)
class YamlDoc:
    """A YAML file's data and the line of each of its keys and list items.

    Attributes:
        path: The file.
        data: What it holds; of a key written twice, the last value.
        lines: The 1-based line of each key and list item (of a key written twice, the
            last).
        duplicates: Every key written twice in one mapping, one error each, when read
            with ``collect=True``.
    """

    path: Path
    data: Any
    lines: dict[Loc, int]
    duplicates: list[SuiteError] = field(default_factory=list)

    @property
    def shown(self) -> str:
        try:
            return str(self.path.resolve().relative_to(Path.cwd()))
        except ValueError:
            return str(self.path)

    def line(self, loc: Loc) -> int:
        """The line of ``loc``, or of its nearest enclosing key that the file has."""
        for n in range(len(loc), -1, -1):
            if loc[:n] in self.lines:
                return self.lines[loc[:n]]
        return 1

    def error(self, loc: Loc, message: str) -> SuiteError:
        line = self.line(loc)
        return SuiteError(message, path=self.shown, line=line, field=format_loc(loc))

    def validate(self, model: type[_M]) -> _M:
        try:
            return model.model_validate(self.data)
        except ValidationError as exc:
            raise self.error(*describe(exc, model)) from None

    def errors(self, model: type[BaseModel]) -> list[tuple[Loc, SuiteError]]:
        """Every place where the data does not fit ``model``, and its error."""
        try:
            model.model_validate(self.data)
        except ValidationError as exc:
            return [(loc, self.error(loc, message)) for loc, message in describe_all(exc, model)]
        return []


def read_yaml(path: Path, *, collect: bool = False) -> YamlDoc:
    """Parse ``path``, keeping the line of every mapping key and list item.

    Args:
        path: The file.
        collect: Keep every key written twice in ``duplicates`` (the data holds the
            last value) rather than raise the first.

    Raises:
        SuiteError: The file cannot be read or parsed; a key written twice, unless
            collecting.
    """
    doc = YamlDoc(path, None, {})
    try:
        loader = yaml.SafeLoader(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read the file: {exc}", path=doc.shown) from None
    try:
        node = loader.get_single_node()
        if node is not None:  # before construction flattens merged keys (`<<`) into node
            _index(node, (), doc)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "unreadable"
        if exc.problem and exc.context and exc.context_mark:  # where the broken part began
            problem += f" ({exc.context} on line {exc.context_mark.line + 1})"
        raise SuiteError(f"YAML syntax error: {problem}", path=doc.shown, line=line) from None
    except yaml.YAMLError as exc:
        raise SuiteError(f"YAML error: {exc}", path=doc.shown) from None
    except RecursionError:  # e.g. an alias that contains itself: &a [*a]
        raise SuiteError("YAML error: a recursive alias", path=doc.shown) from None
    finally:
        loader.dispose()
    if doc.duplicates and not collect:
        raise doc.duplicates[0]
    return YamlDoc(path, data, doc.lines, doc.duplicates)


def _index(node: yaml.Node, loc: Loc, doc: YamlDoc) -> None:
    doc.lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*loc, str(key_node.value))
            first = None if key_node.tag == _MERGE else doc.lines.get(child)
            if first is not None:  # PyYAML would silently keep the last one
                for inner in [k for k in doc.lines if k[: len(child)] == child]:
                    del doc.lines[inner]  # the lines of the value it no longer keeps
            doc.lines[child] = key_node.start_mark.line + 1
            if first is not None:
                doc.duplicates.append(doc.error(child, f"duplicate key (first on line {first})"))
            _index(value_node, child, doc)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, (*loc, i), doc)
