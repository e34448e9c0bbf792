"""One run's directory, ``results/<run-id>/``: the source of truth of its results.

* ``manifest.json`` -- the :class:`~gem_eval.records.RunManifest`, rewritten atomically
  (temporary file, fsync, rename) so that a reader never sees half a manifest.
* ``episodes.jsonl`` -- one :class:`~gem_eval.records.EpisodeRecord` per line, appended as
  episodes finish and fsynced after each, so a crash loses at most the episodes in flight.
* ``attachments/<episode>/<name>`` -- files an episode's tools made (a terminal session's
  asciinema cast), written before its record, which lists them (``attachments``).

A crash in the middle of an append leaves an unterminated last line. Readers skip it, and
the next append cuts it off first, so the file stays valid JSONL. An append that fails (a full
disk, an I/O error) is cut back off at once and raised as
:class:`~gem_eval.errors.StoreWriteError`; a failed manifest write leaves the old manifest in
place. An episode can appear more than once (cancelled by Ctrl-C, then played again on
resume): the last line wins.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

from gem_eval.errors import GemEvalError, StoreWriteError, UserError, closest
from gem_eval.outcomes import REPLAYED_OUTCOMES
from gem_eval.records import EpisodeRecord, RunManifest
from gem_eval.store.run_id import LATEST, is_valid_run_id, slug

MANIFEST_FILE = "manifest.json"
EPISODES_FILE = "episodes.jsonl"
ATTACHMENTS_DIR = "attachments"

_CHUNK = 1 << 16
M = TypeVar("M", bound=BaseModel)


def check_root(root: str | os.PathLike[str]) -> None:
    """Refuse, before a run is planned, a results directory no run can be made in.

    Raises:
        UserError: ``root`` (or a folder on its path) is a file, the nearest folder that
            exists cannot be written, or a folder to make has a name too long.
    """
    path = Path(root)
    for folder in (path, *path.parents):
        try:
            if not folder.exists():
                continue
        except OSError as exc:  # a name the system refuses (too long)
            raise UserError(f"results directory {str(path)!r}: {exc.strerror}") from None
        if not folder.is_dir():
            what = "is a file" if folder == path else f"cannot be made: {str(folder)!r} is a file"
            raise UserError(
                f"results directory {str(path)!r} {what} (set --results-dir or "
                "GEM_EVAL_RESULTS to a directory)"
            )
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(f"results directory {str(path)!r}: {str(folder)!r} is not writable")
        longest = os.pathconf(folder, "PC_NAME_MAX")
        for part in path.parts[len(folder.parts) :]:  # the folders still to make
            if len(os.fsencode(part)) > longest:
                raise UserError(
                    f"results directory {str(path)!r}: a folder name longer than {longest} bytes"
                )
        return


class _Head(BaseModel):
    """The two fields resume needs; parsing skips the (large) trajectory."""

    key: str
    outcome: str


class RunDir:
    """The directory of one run. Safe for one writer (any thread) and many readers.

    Args:
        path: The run's directory, ``<results root>/<run id>``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST_FILE

    @property
    def episodes_path(self) -> Path:
        return self.path / EPISODES_FILE

    @classmethod
    def create(cls, root: str | os.PathLike[str], manifest: RunManifest) -> RunDir:
        """Create ``<root>/<manifest.run_id>/`` with its manifest and an empty episode log.

        Raises:
            UserError: The run id is not a valid directory name, or the run already exists.
            StoreWriteError: A file could not be written.
        """
        if not is_valid_run_id(manifest.run_id):
            raise UserError(f"invalid run id {manifest.run_id!r}")
        root = Path(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreWriteError(root, exc) from exc
        try:
            (root / manifest.run_id).mkdir()
        except FileExistsError:
            raise UserError(f"run {manifest.run_id!r} already exists in {root}") from None
        run = cls(root / manifest.run_id)
        run.write_manifest(manifest)
        try:
            run.episodes_path.touch()
        except OSError as exc:
            raise StoreWriteError(run.episodes_path, exc) from exc
        _fsync_dir(root)
        return run

    @classmethod
    def open(cls, root: str | os.PathLike[str], run_id: str) -> RunDir:
        """Open an existing run; ``run_id`` ``"latest"`` is the most recently started one.

        Raises:
            UserError: No such run under ``root`` (the message names the closest ids).
        """
        root = Path(root)
        if run_id == LATEST:
            return cls.latest(root)
        if is_valid_run_id(run_id) and (root / run_id / MANIFEST_FILE).is_file():
            return cls(root / run_id)
        known = list_run_ids(root)
        if not known:
            raise UserError(f"no run {run_id!r}: there are no runs in {root}")
        hits = [k for k in known if run_id and run_id in k][-3:] or closest(run_id, known)
        hint = f" Did you mean: {', '.join(hits)}?" if hits else ""
        raise UserError(f"no run {run_id!r} in {root}.{hint}")

    @classmethod
    def latest(cls, root: str | os.PathLike[str]) -> RunDir:
        """The run under ``root`` with the latest ``started_at`` (ties: the greater id).

        Raises:
            UserError: There is no run under ``root``.
        """
        root = Path(root)
        best: tuple[float, str] | None = None
        for run_id in list_run_ids(root):
            try:
                started = cls(root / run_id).read_manifest().started_at
            except GemEvalError:
                continue  # a broken manifest names no start time; `results reindex` reports it
            if best is None or (started, run_id) > best:
                best = (started, run_id)
        if best is None:
            raise UserError(f"no runs in {root}")
        return cls(root / best[1])

    def write_manifest(self, manifest: RunManifest) -> None:
        """Replace the manifest atomically: a reader sees the old one or the new one.

        Raises:
            StoreWriteError: The new manifest could not be written (the old one is intact).
        """
        if manifest.run_id != self.run_id:
            raise ValueError(f"manifest of run {manifest.run_id!r} written to {self.path}")
        _replace_file(self.manifest_path, manifest.model_dump_json(indent=2).encode() + b"\n")
        _fsync_dir(self.path)

    def read_manifest(self) -> RunManifest:
        """The run's manifest.

        Raises:
            GemEvalError: It is missing or does not validate.
        """
        try:
            return RunManifest.model_validate_json(self.manifest_path.read_bytes())
        except (OSError, ValidationError) as exc:
            raise GemEvalError(f"{self.manifest_path}: unreadable manifest: {exc}") from exc

    def append(self, record: EpisodeRecord) -> None:
        """Append one record and fsync it: once this returns, the record survives a crash.

        Raises:
            StoreWriteError: The record could not be written; the file is as it was.
        """
        self.extend((record,))

    def extend(self, records: Iterable[EpisodeRecord]) -> int:
        """Append many records with one fsync (imports, tests); returns how many.

        All or nothing: when the write or the fsync fails, the file is cut back to where it
        ended, so that no partial line (nor part of the batch) is left for a reader.

        Raises:
            StoreWriteError: The records could not be written.
        """
        lines = []
        for record in records:
            if record.run_id != self.run_id:
                raise ValueError(f"record of run {record.run_id!r} appended to {self.path}")
            self._keep_attachments(record)
            lines.append(record.model_dump_json().encode() + b"\n")
        with self._lock:
            try:
                with open(self.episodes_path, "a+b", buffering=0) as f:
                    _cut_torn_tail(f)
                    end = f.seek(0, os.SEEK_END)
                    try:
                        _write_all(f.fileno(), b"".join(lines))
                        os.fsync(f.fileno())
                    except OSError:
                        # Cutting frees room, so it works on a full disk; should it fail
                        # too (EIO), readers skip the torn line and the next append cuts it.
                        with contextlib.suppress(OSError):
                            f.truncate(end)
                            os.fsync(f.fileno())
                        raise
            except OSError as exc:
                raise StoreWriteError(self.episodes_path, exc) from exc
        return len(lines)

    def _keep_attachments(self, record: EpisodeRecord) -> None:
        """Write the files that came with ``record`` (a replay's replace the last
        attempt's) and list them in it, before its line is appended."""
        files = record.take_files()
        if not files:
            return
        folder = Path(ATTACHMENTS_DIR) / episode_slug(record.key)
        for name, text in files.items():
            if Path(name).name != name or name.startswith("."):
                raise ValueError(f"attachment name {name!r} is not a plain file name")
            target = self.path / folder / name
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreWriteError(target.parent, exc) from exc
            _replace_file(target, text.encode())
            record.attachments.append(str(folder / name))

    def records(self) -> Iterator[EpisodeRecord]:
        """Every complete record, in the order written (duplicates of a key included).

        Raises:
            GemEvalError: A complete line is not a valid record (the file was edited).
        """
        return self.read_as(EpisodeRecord)

    def read_as(self, model: type[M]) -> Iterator[M]:
        """Every complete line validated as ``model``: a model with some of
        :class:`~gem_eval.records.EpisodeRecord`'s fields parses faster, skipping the rest
        (the trajectory above all).

        Raises:
            GemEvalError: A complete line does not validate.
        """
        for lineno, line in self._lines():
            try:
                yield model.model_validate_json(line)
            except ValidationError as exc:
                raise GemEvalError(f"{self.episodes_path}:{lineno}: bad record: {exc}") from exc

    def latest_by_key(self) -> dict[str, EpisodeRecord]:
        """The last record of each episode key."""
        return {r.key: r for r in self.records()}

    def history(self, counted: Collection[str]) -> dict[str, tuple[str, int]]:
        """Each key's last outcome and how many of its records ended in ``counted``
        outcomes (the attempts that count against ``--max-attempts``)."""
        out: dict[str, tuple[str, int]] = {}
        for head in self.read_as(_Head):
            _, attempts = out.get(head.key, ("", 0))
            out[head.key] = (head.outcome, attempts + (head.outcome in counted))
        return out

    def done_keys(self, rerun: Collection[str] = REPLAYED_OUTCOMES) -> set[str]:
        """Keys of the episodes that resume must not play again.

        Args:
            rerun: Outcomes that do not count as done (by default only ``cancelled``).
                The last record of a key decides.
        """
        last = {head.key: head.outcome for head in self.read_as(_Head)}
        return {key for key, outcome in last.items() if outcome not in rerun}

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        """Complete, non-blank lines with their 1-based numbers; an unterminated tail is
        a torn write (or one still in progress) and is left out."""
        if not self.episodes_path.exists():
            return
        with open(self.episodes_path, "rb") as f:
            for lineno, line in enumerate(f, 1):
                if not line.endswith(b"\n"):
                    return
                if line.strip():
                    yield lineno, line


def list_run_ids(root: str | os.PathLike[str]) -> list[str]:
    """The ids of the runs under ``root`` (directories with a manifest), sorted."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / MANIFEST_FILE).is_file())


def episode_slug(key: str) -> str:
    """A file name for the episode ``key`` (unique: a slug plus a hash of the key)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"{slug(key, max_len=80)}-{digest}"


def _replace_file(path: Path, data: bytes) -> None:
    """Write ``path`` atomically (temporary file, fsync, rename): a reader sees the old
    content or the new, never part of it.

    Raises:
        StoreWriteError: It could not be written (an old file is intact).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb", buffering=0) as f:
            _write_all(f.fileno(), data)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)  # a half-written copy would only take up room
        raise StoreWriteError(path, exc) from exc


def _cut_torn_tail(f: BinaryIO) -> None:
    """Truncate ``f`` after its last newline, dropping a line a crash left unfinished."""
    size = f.seek(0, os.SEEK_END)
    if size == 0:
        return
    f.seek(size - 1)
    if f.read(1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - _CHUNK)
        f.seek(start)
        newline = f.read(end - start).rfind(b"\n")
        if newline >= 0:
            f.truncate(start + newline + 1)
            return
        end = start
    f.truncate(0)


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``: ``os.write`` may write less than it was given (a
    disk filling up writes what fits, and only the next call fails with ENOSPC)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in ``path`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
