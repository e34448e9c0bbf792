"""Exporting recorded runs into formats other tools read.

:func:`export_run` writes a run's episodes (the last record of each) into a directory in
one of the :class:`ExportFormat`\\ s. Each format is a module with a ``write_run(manifest,
records, out)`` function returning the files it wrote, imported only when used; adding a
format is a member of :class:`ExportFormat` and an entry of :data:`FORMATS`.

* ``atif``: one ATIF document (Harbor's Agent Trajectory Interchange Format) per
  episode, see :mod:`gem_eval.export.atif`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gem_eval.errors import StoreWriteError, UserError

if TYPE_CHECKING:
    from gem_eval.records import EpisodeRecord, RunManifest
    from gem_eval.store import RunDir


class ExportFormat(str, Enum):
    """A format :func:`export_run` writes."""

    atif = "atif"


FORMATS: dict[ExportFormat, str] = {ExportFormat.atif: "gem_eval.export.atif"}
"""The module that writes each format (imported when used)."""


class FormatWriter(Protocol):
    """What a format's module provides."""

    def __call__(
        self, manifest: RunManifest, records: Sequence[EpisodeRecord], out: Path
    ) -> list[Path]: ...


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_run` did.

    Attributes:
        format: The format written.
        run_id: The run exported.
        out: The directory written to.
        files: The files written, in the order of the run's episodes.
        episodes: How many episodes they hold.
    """

    format: ExportFormat
    run_id: str
    out: Path
    files: list[Path]
    episodes: int


def export_run(run: RunDir, format: ExportFormat | str, out: Path) -> ExportResult:
    """Write the last record of each of ``run``'s episodes to ``out`` in ``format``.

    Raises:
        UserError: An unknown format, a run without episodes, or ``out`` is a file.
        StoreWriteError: ``out`` cannot be written.
        GemEvalError: The run's files do not read (an edited record).
    """
    try:
        fmt = ExportFormat(format)
    except ValueError:
        names = ", ".join(f.value for f in ExportFormat)
        raise UserError(f"unknown export format {format!r} (formats: {names})") from None
    manifest = run.read_manifest()
    records = list(run.latest_by_key().values())
    if not records:
        raise UserError(f"run {run.run_id} has no episodes to export")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreWriteError(out, exc) from exc
    write: FormatWriter = importlib.import_module(FORMATS[fmt]).write_run
    files = write(manifest, records, out)
    return ExportResult(fmt, run.run_id, out, files, len(records))


__all__ = ["FORMATS", "ExportFormat", "ExportResult", "export_run"]
