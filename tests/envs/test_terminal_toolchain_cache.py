"""The toolchain's record kept on disk (``gem_eval.envs.terminal.toolchain_cache``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from gem_eval.envs.terminal import toolchain_cache


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path))
    return tmp_path


def test_an_entry_is_read_back_as_kept() -> None:
    key = toolchain_cache.entry_key("sha256:abc", "probe", {"A": "1"})
    program = b"\x7fELF find"
    digest = hashlib.sha256(program).hexdigest()
    assert toolchain_cache.load(key) is None
    toolchain_cache.store(key, "sealed /usr/bin\n", b"f 1.0 /usr/bin/x\0\0", {digest: program})
    assert toolchain_cache.load(key) == ("sealed /usr/bin\n", b"f 1.0 /usr/bin/x\0\0")
    assert toolchain_cache.blob(digest) == program


def test_the_key_names_the_image_the_probe_and_the_environment() -> None:
    base = toolchain_cache.entry_key("sha256:abc", "probe", {"A": "1"})
    assert base == toolchain_cache.entry_key("sha256:abc", "probe", {"A": "1"})
    assert base != toolchain_cache.entry_key("sha256:abd", "probe", {"A": "1"})
    assert base != toolchain_cache.entry_key("sha256:abc", "probe 2", {"A": "1"})
    assert base != toolchain_cache.entry_key("sha256:abc", "probe", {"A": "2"})


def test_an_altered_or_unreadable_entry_is_not_used(own_cache: Path) -> None:
    program = b"timeout"
    digest = hashlib.sha256(program).hexdigest()
    toolchain_cache.store("k", "out", b"", {digest: program})
    (own_cache / "toolchains" / "blobs" / digest).write_bytes(b"something else")
    assert toolchain_cache.blob(digest) is None
    (own_cache / "toolchains" / "k.json").write_text("{not json")
    assert toolchain_cache.load("k") is None
