"""A registry of datasets in Harbor's format, and looking a ``NAME@VERSION`` up in it.

The document is a JSON list; each entry is one version of one dataset (Harbor's
``DatasetSpec``, ``harbor/models/registry.py``)::

    [
      {
        "name": "terminal-bench",
        "version": "2.0",
        "description": "Terminal-Bench 2.0",            # optional
        "tasks": [
          {
            "name": "hello-world",
            "git_url": "https://github.com/laude-institute/terminal-bench-2.git",
            "git_commit_id": "<40 hex digits>",          # or a branch, a tag, null (HEAD)
            "path": "hello-world"                        # its directory in the repository
          }
        ],
        "metrics": []                                    # Harbor's; not read here
      }
    ]

Only the entry asked for is validated, so one malformed entry elsewhere in a large
registry does not stop the others. Keys gem-eval does not read are ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gem_eval.errors import RegistryError, did_you_mean
from gem_eval.registry.source import canonical, read_source, registry_source

_REF = re.compile(r"(?P<name>[A-Za-z0-9][\w.-]*(?:/[\w.-]+)?)@(?P<version>[\w.+-]+)")


@dataclass(frozen=True)
class DatasetRef:
    """A dataset's name and version, as ``NAME@VERSION`` (``terminal-bench@2.0``)."""

    name: str
    version: str

    @classmethod
    def parse(cls, text: str) -> DatasetRef | None:
        """The reference ``text`` spells, or ``None`` when it is not ``NAME@VERSION``."""
        match = _REF.fullmatch(text.strip())
        return cls(match["name"], match["version"]) if match else None

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"


class RegistryTask(BaseModel):
    """One task of a dataset: where it is in which repository, at which commit."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1)
    git_url: str | None = None
    git_commit_id: str | None = None
    path: str = Field(min_length=1)


class DatasetEntry(BaseModel):
    """One version of one dataset."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    name: str
    version: str
    description: str = ""
    tasks: list[RegistryTask]


@dataclass(frozen=True)
class Registry:
    """A registry document, read.

    Attributes:
        source: Where it was read from: a URL, or a file's absolute path.
        rows: Its entries as written (validated one at a time by :meth:`find`).
    """

    source: str
    rows: list[Any]

    def find(self, ref: DatasetRef) -> DatasetEntry:
        """The entry of ``ref``.

        Raises:
            RegistryError: No such dataset (with the closest names), no such version
                (with the known ones), or the entry is malformed.
        """
        versions: list[str] = []
        for index, row in enumerate(self.rows):
            if not isinstance(row, dict) or row.get("name") != ref.name:
                continue
            version = str(row.get("version"))
            if version == ref.version:
                return self._entry(index, row, ref)
            versions.append(version)
        if not versions:
            names = self.names()
            hint = did_you_mean(ref.name, names) or (
                f" It has {len(names)}: {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}."
                if names
                else " It has none."
            )
            raise RegistryError(f"unknown dataset {ref.name!r} in registry {self.source}.{hint}")
        raise RegistryError(
            f"dataset {ref.name!r} has no version {ref.version!r} in registry {self.source}; "
            f"its versions: {', '.join(versions)}"
        )

    def names(self) -> list[str]:
        """The datasets' names, once each, in the registry's order."""
        named = (row.get("name") for row in self.rows if isinstance(row, dict))
        return list(dict.fromkeys(n for n in named if isinstance(n, str)))

    def _entry(self, index: int, row: dict[str, Any], ref: DatasetRef) -> DatasetEntry:
        try:
            return DatasetEntry.model_validate(row)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(
                f"[{part}]" if isinstance(part, int) else str(part) for part in error["loc"]
            ).replace(".[", "[")
            raise RegistryError(
                f"registry {self.source}: entry {index} ({ref}): {where}: {error['msg']}"
            ) from None


def read_registry(source: str | None = None) -> Registry:
    """Read the registry at ``source`` (see :func:`~gem_eval.registry.source.registry_source`
    for the default).

    Raises:
        RegistryError: It cannot be read, is not JSON, or is not a list.
    """
    where = registry_source(source)
    text = read_source(where)
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RegistryError(f"registry {where}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(rows, list):
        raise RegistryError(f"registry {where}: a JSON list of datasets expected")
    return Registry(canonical(where), rows)
