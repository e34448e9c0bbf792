"""Dataset rows: JSONL, CSV, Parquet, or a Hugging Face dataset id.

Read by a suite's ``dataset:`` block (one sample per row) and by an env given a
``dataset`` file of questions; it sits below both, so envs need not import suites. JSONL
and CSV need nothing beyond the standard library (CSV values are strings). Parquet reads
through ``pyarrow`` (or ``pandas``), and a Hugging Face id through ``datasets``; both are
imported only here, when such a dataset is read, and a missing package is a
:class:`DatasetError` naming what to install.

``fields: {question: problem}`` maps the env's parameter ``question`` to the column
``problem``; the mapped values are the sample's ``sample_kwargs``.
"""

from __future__ import annotations

import csv
import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gem_eval.errors import UserError, did_you_mean

Row = dict[str, Any]

_EXTENSIONS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


class Dataset(BaseModel):
    """Where rows come from: a suite's ``dataset:`` block, one sample per row.

    Attributes:
        path: A local file (looked up in the ``base_dirs`` given to :func:`load_rows`:
            for a suite, the file naming it, then the bundled root, then the working
            directory) or a Hugging Face dataset id.
        format: ``jsonl``, ``csv``, ``parquet`` or ``hf``; by default the file extension,
            else ``hf``.
        split: The Hugging Face split (default ``train``).
        name: The Hugging Face configuration name, if the dataset has several.
        fields: ``{env_parameter: column}``; each sample's ``sample_kwargs``. Without it,
            the whole row.
    """

    # As strict as the rest of the suite schema: YAML gives typed values, typos are errors.
    model_config = ConfigDict(extra="forbid", strict=True)

    path: str = Field(min_length=1)
    format: Literal["jsonl", "csv", "parquet", "hf"] | None = None
    split: str | None = None
    name: str | None = None
    fields: dict[str, str] | None = None


class DatasetError(UserError):
    """A dataset that cannot be read; ``str`` is one line.

    Raised without a path when the fault lies in what names the dataset (a suite loader
    adds that file and line), or with the data file's own path and line when the fault
    lies in the data (a JSONL line that is not an object).

    Attributes:
        message: The message without the location.
        path: The data file at fault, as shown, if the fault is in the data.
        line: Its 1-based line.
        key: The ``fields`` entry at fault, if any.
    """

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, key: str = ""
    ) -> None:
        self.message = " ".join(message.split())  # one line, whatever the cause held
        self.path, self.line, self.key = path, line, key
        where = f"{path}:{line}: " if path and line else f"{path}: " if path else ""
        super().__init__(f"{where}{self.message}")


def dataset_format(source: Dataset) -> str:
    """The format of ``source``: as given, else from the file extension, else ``hf``."""
    if source.format:
        return source.format
    return _EXTENSIONS.get(Path(source.path).suffix.lower(), "hf")


def load_rows(source: Dataset, *, base_dirs: Sequence[Path]) -> list[Row]:
    """Read every row of ``source``, with its fields mapped.

    Args:
        source: The ``dataset:`` block.
        base_dirs: Where a relative local path is looked up, in order.

    Raises:
        DatasetError: A missing file or package, an unreadable row, an unknown column,
            or no rows at all.
    """
    fmt = dataset_format(source)
    if fmt == "hf":
        rows = _read_hf(source)
    else:
        path = _find(source.path, base_dirs)
        shown = _shown(path)
        try:
            if fmt == "jsonl":
                rows = _read_jsonl(path, shown)
            elif fmt == "csv":
                with path.open(newline="", encoding="utf-8") as fh:
                    rows = [dict(row) for row in csv.DictReader(fh)]
            else:
                rows = _read_parquet(path)
        except (UnicodeDecodeError, csv.Error) as exc:
            raise DatasetError(f"not a {fmt} file: {exc}", path=shown) from None
        except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            if fmt != "parquet":
                raise
            raise DatasetError(
                f"not a Parquet file: {str(exc).split('. ')[0]}", path=shown
            ) from None
    if not rows:
        raise DatasetError(f"dataset {source.path!r} has no rows")
    return map_fields(rows, source.fields) if source.fields else rows


def map_fields(rows: list[Row], fields: dict[str, str]) -> list[Row]:
    """``{name: row[column]}`` for each row; every column must be in every row."""
    for name, column in fields.items():
        for index, row in enumerate(rows):
            if column not in row:
                where = "" if index == 0 else f" in row {index}"
                hint = did_you_mean(column, row) or f" Columns: {', '.join(map(str, row))}."
                raise DatasetError(f"no column {column!r}{where}.{hint}", key=name)
    return [{name: row[column] for name, column in fields.items()} for row in rows]


def _find(name: str, base_dirs: Sequence[Path]) -> Path:
    candidates = [Path(name)] if Path(name).is_absolute() else [base / name for base in base_dirs]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise DatasetError(f"dataset file {name!r} not found")


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read_jsonl(path: Path, shown: str) -> list[Row]:
    rows: list[Row] = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"invalid JSON: {exc.msg}", path=shown, line=number) from None
            if not isinstance(row, dict):
                kind = type(row).__name__
                raise DatasetError(f"expected a JSON object, got {kind}", path=shown, line=number)
            rows.append(row)
    return rows


# The optional packages are imported by name, here only: `gem-eval --help` and suites
# without such datasets never load them.


def _read_parquet(path: Path) -> list[Row]:
    try:
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError:
        pass
    else:
        return list(pq.read_table(path).to_pylist())
    try:
        pd = importlib.import_module("pandas")
    except ImportError:
        raise DatasetError("reading Parquet needs pyarrow: pip install 'gem-eval[rl]'") from None
    frame = pd.read_parquet(path)
    return [dict(row) for row in frame.to_dict(orient="records")]


def _read_hf(source: Dataset) -> list[Row]:
    try:
        datasets = importlib.import_module("datasets")
    except ImportError:
        raise DatasetError(
            f"{source.path!r} is read as a Hugging Face dataset id, which needs the "
            "`datasets` package (pip install datasets); for a local file, check the path "
            "or set `format`"
        ) from None
    split = source.split or "train"
    try:
        loaded = datasets.load_dataset(source.path, source.name, split=split)
    except Exception as exc:  # the library raises many kinds; all mean "cannot load"
        raise DatasetError(f"cannot load Hugging Face dataset {source.path!r}: {exc}") from exc
    return [dict(row) for row in loaded]
