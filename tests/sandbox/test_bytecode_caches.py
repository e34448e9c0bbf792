"""Task directories are copied, hashed and built without their bytecode caches.

pip compiles the ``.py`` files of the tasks bundled in an installed wheel: a starting
state that an MCP grader checks file by file must not arrive with a ``__pycache__``, and
an installed wheel's task and service images must be the checkout's (same key, same
content), not rebuilt because of bytecode.
"""

from __future__ import annotations

import asyncio
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from gem_eval.cache import MANIFEST
from gem_eval.envs.mcpmark import services
from gem_eval.sandbox.docker import _tar_dir
from gem_eval.sandbox.images import _context_tar, context_hash

CONTENT = {"README.md": b"hello\n", "tool.py": b"print(1)\n", "sub/data.csv": b"a,b\n"}
CACHES = ["__pycache__/tool.cpython-311.pyc", "sub/__pycache__/x.cpython-311.pyc"]


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    root = tmp_path / "state"
    for name, data in CONTENT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    for name in CACHES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"\x00bytecode")
    return root


def test_the_docker_archive_leaves_out_bytecode_caches(task_dir: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(_tar_dir(task_dir))) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
        names = tar.getnames()
    assert files == CONTENT
    assert not [n for n in names if "__pycache__" in n]


def _listing(box: Any, dest: str) -> list[str]:
    async def main() -> list[str]:
        result = await box.exec(f"cd {dest} && find . | sort", user="root")
        assert result.ok, result.stderr
        return [line.removeprefix("./") for line in result.stdout.split() if line != "."]

    return asyncio.run(main())


@pytest.mark.bwrap
def test_a_bubblewrap_sandbox_gets_the_content_only(local_box: Any, task_dir: Path) -> None:
    dest = f"{local_box.workdir}/state"
    asyncio.run(local_box.copy_dir(task_dir, dest))
    assert _listing(local_box, dest) == ["README.md", "sub", "sub/data.csv", "tool.py"]


@pytest.mark.docker
def test_a_docker_sandbox_gets_the_content_only(docker_box: Any, task_dir: Path) -> None:
    asyncio.run(docker_box.copy_dir(task_dir, "/data/state"))
    assert _listing(docker_box, "/data/state") == ["README.md", "sub", "sub/data.csv", "tool.py"]


def test_a_build_context_hashes_and_ships_without_bytecode(task_dir: Path) -> None:
    with_caches = context_hash(task_dir, "FROM base\n")
    with tarfile.open(fileobj=_context_tar(task_dir, "Dockerfile", "FROM base\n")) as tar:
        names = tar.getnames()
    assert sorted(names) == ["Dockerfile", "README.md", "sub", "sub/data.csv", "tool.py"]
    for name in CACHES:
        (task_dir / name).unlink()
    assert context_hash(task_dir, "FROM base\n") == with_caches
    (task_dir / "sub" / "more.txt").write_text("content counts")
    assert context_hash(task_dir, "FROM base\n") != with_caches


class _Plain(services.Service):
    """A service with nothing to fetch (its context is its image directory)."""

    name = "plain"
    required = ("README.md",)

    def fetch(self, context: Path) -> None:
        pass

    def tools(self) -> list[Any]:
        return []

    async def setup(self, sandbox: Any, state: Path | None) -> None:
        pass

    def env(self) -> dict[str, str]:
        return {}


def test_a_service_context_is_keyed_and_copied_without_bytecode(
    task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = tmp_path / "images"
    images.mkdir()
    task_dir.rename(images / "plain")
    monkeypatch.setattr(services, "IMAGES", images)
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path / "cache"))
    first = _Plain().build_context()
    copied = {p.relative_to(first).as_posix() for p in first.rglob("*")} - {MANIFEST}
    assert sorted(copied) == [
        "README.md",
        "sub",
        "sub/data.csv",
        "tool.py",
    ]
    for name in CACHES:
        (images / "plain" / name).unlink()
    assert _Plain().build_context() == first  # the same key without the caches
