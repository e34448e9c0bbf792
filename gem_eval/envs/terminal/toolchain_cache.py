"""The toolchain's record kept on disk, per image: a later run need not probe again.

What :func:`~gem_eval.envs.terminal.toolchain.probe` finds in a pristine container
depends on the image (its ID, not its name), the probe script (gem-eval's probe and the
task's test scripts) and the container's environment, not on the container: the
in-process cache already relies on that. This module keeps it across runs, in
``$GEM_EVAL_CACHE/toolchains`` (beside the compiled init and tracer, see
:mod:`gem_eval.cache`), so a later run on the same image (another model, another
checkpoint, a re-run) reads the record instead of probing before the agent's first
command (~0.5-1.5 s an episode on this project's machines).

Kept as read, under a hash of those three: the probe's output and the listing (parsed
again on load, so a newer parser never reads an older one's result), and the audit's
programs by content hash (checked against it when read back). Each file is written
beside its place and renamed in: a reader sees a whole entry or none; one it cannot
read is probed again.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import uuid
from pathlib import Path

from gem_eval.cache import cache_dir

_FORMAT = 1


def entry_key(image_id: str, script: str, env: dict[str, str]) -> str:
    """The entry of an image (its ID), a probe script and a container environment."""
    text = json.dumps([_FORMAT, image_id, script, sorted(env.items())])
    return hashlib.sha256(text.encode()).hexdigest()


def _root() -> Path:
    return cache_dir("toolchains")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def load(key: str) -> tuple[str, bytes] | None:
    """The probe's output and listing kept under ``key`` (``None``: none, or unreadable)."""
    try:
        record = json.loads((_root() / f"{key}.json").read_text())
        return str(record["probe"]), base64.b64decode(record["listing"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key: str, probe_output: str, listing: bytes, blobs: dict[str, bytes]) -> None:
    """Keep a probe's output, its listing and the audit's programs (``sha256 -> bytes``).
    A failure to write is not the episode's: the next run probes again."""
    with contextlib.suppress(OSError):
        for digest, data in blobs.items():
            if not (_root() / "blobs" / digest).is_file():
                _write(_root() / "blobs" / digest, data)
        listed = base64.b64encode(listing).decode()
        record = json.dumps({"probe": probe_output, "listing": listed})
        _write(_root() / f"{key}.json", record.encode())


def blob(digest: str) -> bytes | None:
    """A kept program whose content hash is ``digest`` (``None``: absent or altered)."""
    try:
        data = (_root() / "blobs" / digest).read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == digest else None
