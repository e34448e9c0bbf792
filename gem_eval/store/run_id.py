"""Run ids: ``2026-12-02T13-20-05-smoke-ab12cd``.

The UTC start time comes first, so ids sort by time as plain strings; the suite name makes
them readable; six random hex digits keep two runs started in the same second apart. The id
is also the name of the run's directory, so it holds no path separators.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import Any

from gem_eval.errors import UserError, did_you_mean

_TIME_FORMAT = "%Y-%m-%dT%H-%M-%S"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.]+")
_VALID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}")
"""A directory name: at most 200 characters (file systems take 255 bytes)."""
LATEST = "latest"
"""Stands for the most recently started run."""
RESERVED_IDS = frozenset({LATEST})
"""Names that stand for a run rather than name one (``--resume latest``)."""


def slug(name: str, max_len: int = 40) -> str:
    """``name`` reduced to letters, digits, ``_`` and ``.``, other runs become ``-``."""
    cleaned = _UNSAFE.sub("-", name).strip("-.")[:max_len].strip("-.")
    return cleaned or "run"


def new_run_id(suite: str, now: float | None = None) -> str:
    """A fresh run id for a run of ``suite`` starting at ``now`` (default: the current time).

    Args:
        suite: The suite name; reduced to a file-name-safe slug.
        now: A Unix timestamp; the id shows it in UTC to the second.

    Returns:
        An id like ``2026-12-02T13-20-05-smoke-ab12cd``.
    """
    stamp = time.strftime(_TIME_FORMAT, time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{slug(suite)}-{secrets.token_hex(3)}"


def is_valid_run_id(run_id: str) -> bool:
    """True when ``run_id`` can name a run directory (see :func:`check_run_id`)."""
    return run_id not in RESERVED_IDS and _VALID.fullmatch(run_id) is not None


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it can name a run directory, else raise.

    Raises:
        UserError: The id is empty, reserved (``latest``), longer than 200 characters, or
            holds characters other than letters, digits, ``_``, ``.`` and ``-`` (or starts
            with ``.`` or ``-``).
    """
    if not is_valid_run_id(run_id):
        raise UserError(
            f"invalid run id {run_id!r}: use up to 200 letters, digits, '_', '.' and '-' "
            "(not starting with '.' or '-'), and not 'latest'"
        )
    return run_id


def resolve_run(runs: list[dict[str, Any]], run_id: str) -> dict[str, Any]:
    """The index row (:meth:`~gem_eval.store.Index.runs`) of ``run_id``; ``latest`` is the
    most recently started run.

    Raises:
        UserError: No such run (the message names the closest ids).
    """
    if run_id == LATEST and runs:
        return max(runs, key=lambda r: (r.get("started_at") or 0.0, r["run_id"]))
    for run in runs:
        if run["run_id"] == run_id:
            return run
    if not runs:
        raise UserError(f"no run {run_id!r}: the index holds no runs")
    raise UserError(f"no run {run_id!r}.{did_you_mean(run_id, [r['run_id'] for r in runs])}")
