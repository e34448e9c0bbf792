"""``YamlDoc``: a YAML file's data with the line of every key and list item, so that
errors about a suite or task file name the file and line (``file:line: field: ...``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from gem_eval.suites.schema import Loc, SuiteError, describe, describe_all, format_loc

_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class YamlDoc:
    """A YAML file's data and the line of each of its keys and list items."""

    path: Path
    data: Any
    lines: dict[Loc, int]

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


def read_yaml(path: Path) -> YamlDoc:
    """Parse ``path``, keeping the line of every mapping key and list item."""
    doc = YamlDoc(path, None, {})
    try:
        loader = yaml.SafeLoader(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read the file: {exc}", path=doc.shown) from None
    try:
        node = loader.get_single_node()
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
    doc = YamlDoc(path, data, {})
    if node is not None:
        try:
            _index(node, (), doc)
        except RecursionError:
            raise SuiteError("YAML error: a recursive alias", path=doc.shown) from None
    return doc


def _index(node: yaml.Node, loc: Loc, doc: YamlDoc) -> None:
    doc.lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*loc, str(key_node.value))
            if child in doc.lines:  # PyYAML would silently keep the last one
                first = doc.lines[child]
                doc.lines[child] = key_node.start_mark.line + 1
                raise doc.error(child, f"duplicate key (first on line {first})")
            doc.lines[child] = key_node.start_mark.line + 1
            _index(value_node, child, doc)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, (*loc, i), doc)
