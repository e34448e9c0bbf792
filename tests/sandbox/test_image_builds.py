"""Images a run needs are built once, before its first episode, and only those: an
image-map target that no task's ``FROM`` maps to is never built, and a build that fails
is not tried again for the task's later episodes. Builds are counted at ``docker build``
itself; every context carries a fresh label, so no earlier build is found cached."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gem_eval.envs.hosted import HostedEnv
from gem_eval.errors import UserError
from gem_eval.records import TaskSpec
from gem_eval.registration import make
from gem_eval.runner.provision import Provisioner
from gem_eval.sandbox import docker_client, images

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
TB2 = ROOT / "tests" / "fixtures" / "terminal" / "tb2-count-words"


def build_dir(path: Path, dockerfile: str) -> Path:
    """A build context whose image no earlier run has (a fresh label in it)."""
    path.mkdir(parents=True)
    (path / "Dockerfile").write_text(f"{dockerfile}\nLABEL test.nonce={uuid.uuid4().hex}\n")
    return path


def terminal_task(root: Path, dockerfile: str) -> Path:
    """The TB2 fixture with its own Dockerfile (no ``RUN``: nothing needs a network)."""
    task = root / "task"
    shutil.copytree(TB2, task, ignore=shutil.ignore_patterns("environment"))
    env = build_dir(task / "environment", dockerfile)
    (env / "corpus.txt").write_text("the cat and the dog\n")
    return task


def task_spec(task: Path, image_map: dict[str, str]) -> TaskSpec:
    kwargs = {"path": str(task), "image_map": image_map}
    return TaskSpec(id="tb", env_id="terminal:Task-v0", env_kwargs=kwargs)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The Dockerfiles ``docker build`` was started on, in order; their images are
    removed afterwards."""
    built: list[str] = []
    tags: list[str] = []
    real = images._docker_build

    def counted(context: Path, dockerfile: str, text: str, tag: str, shown: Path) -> None:
        built.append(str(shown))
        tags.append(tag)
        real(context, dockerfile, text, tag, shown)

    monkeypatch.setattr(images, "_docker_build", counted)
    yield built
    for tag in reversed(tags):  # the task's image first: it stands on the target's
        with contextlib.suppress(Exception):
            docker_client.client().images.remove(tag, force=True)


def test_only_the_image_map_targets_a_task_uses_are_built(
    tmp_path: Path, builds: list[str]
) -> None:
    used = build_dir(tmp_path / "used", "FROM gem-eval/base:bookworm")
    unused = build_dir(tmp_path / "unused", "FROM gem-eval/base:bookworm")
    task = terminal_task(tmp_path, "FROM python:3.13-slim-bookworm\nWORKDIR /app\nCOPY . /app/")
    spec = task_spec(task, {"python:3*": str(used), "ubuntu:*": str(unused)})
    lines: list[str] = []
    provisioner = Provisioner(log=lines.append)
    asyncio.run(provisioner.prepare([spec]))
    assert builds == [str(used / "Dockerfile"), str(task / "environment" / "Dockerfile")]
    assert len(lines) == 2 and all(line.startswith("tb: building gem-eval/task:") for line in lines)

    # The episodes that follow find the image built: nothing is built again.
    env = make(spec.env_id, **spec.env_kwargs)
    assert isinstance(env.unwrapped, HostedEnv)
    image = provisioner.hosted_spec(spec, env.unwrapped.resources()).image
    assert image is not None and image.startswith("gem-eval/task:")
    asyncio.run(provisioner.prepare([spec]))
    assert len(builds) == 2


def test_a_failed_build_is_one_error_and_is_not_tried_again(
    tmp_path: Path, builds: list[str]
) -> None:
    task = terminal_task(tmp_path, "FROM gem-eval/base:bookworm\nCOPY missing.txt /app/")
    spec = task_spec(task, {})
    provisioner = Provisioner()
    with pytest.raises(UserError) as first:
        asyncio.run(provisioner.prepare([spec]))
    message = str(first.value)
    assert message.startswith("task 'tb': building gem-eval/task:")
    assert "missing.txt" in message and "\n" not in message  # the build's last words
    env = make(spec.env_id, **spec.env_kwargs)
    assert isinstance(env.unwrapped, HostedEnv)
    for _ in range(3):  # the task's episodes: the same error, no new build
        with pytest.raises(UserError, match=r"missing\.txt"):
            provisioner.hosted_spec(spec, env.unwrapped.resources())
    assert len(builds) == 1
