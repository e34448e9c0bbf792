"""``Sandbox.copy_dir`` copies a task directory's content, and never its bytecode caches.

pip compiles the ``.py`` files of the tasks bundled in an installed wheel: a starting
state that an MCP grader checks file by file must not arrive with a ``__pycache__``.
"""

from __future__ import annotations

import asyncio
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from gem_eval.sandbox.docker import _tar_dir

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
