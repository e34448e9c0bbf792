"""Shared pytest fixtures."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

# litellm must never reach the network, in any test that imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _docker_problem() -> str | None:
    """Why Docker tests cannot run here, or ``None``."""
    try:
        from gem_eval.records import SandboxSpec
        from gem_eval.sandbox.factory import check_available

        check_available(SandboxSpec(type="docker"))
    except Exception as exc:
        return str(exc)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip Docker/bubblewrap tests where they cannot run, with the reason, except in CI
    (``CI=true``), where they must run: there a missing engine fails them instead."""
    import shutil

    problems: dict[str, str | None] = {}
    if any("docker" in item.keywords for item in items):
        problems["docker"] = _docker_problem()
    if any("bwrap" in item.keywords for item in items):
        problems["bwrap"] = None if shutil.which("bwrap") else "bubblewrap is not installed"
    for item in items:
        for mark, problem in problems.items():
            if mark in item.keywords and problem is not None:
                if IN_CI:
                    item.add_marker(pytest.mark.usefixtures(f"_{mark}_required"))
                else:
                    item.add_marker(pytest.mark.skip(reason=f"{mark}: {problem}"))


@pytest.fixture
def _docker_required() -> None:
    problem = _docker_problem()
    if problem is not None:
        pytest.fail(f"CI=true but Docker tests cannot run: {problem}")


@pytest.fixture
def _bwrap_required() -> None:
    pytest.fail("CI=true but bubblewrap is not installed")


@pytest.fixture(scope="module")
def docker_box() -> Iterator[Any]:
    """A started Docker sandbox shared by a test module (``GEM_EVAL_BOX=docker`` set)."""
    import uuid

    from gem_eval.sandbox.docker import DockerSandbox

    box = DockerSandbox(run_id=f"test-{uuid.uuid4().hex[:8]}", env={"GEM_EVAL_BOX": "docker"})
    try:
        asyncio.run(box.start())
        yield box
    finally:
        asyncio.run(box.close())


@pytest.fixture
def local_box() -> Iterator[Any]:
    """A started bubblewrap sandbox for one test."""
    from gem_eval.sandbox.local import LocalSandbox

    box = LocalSandbox()
    try:
        asyncio.run(box.start())
        yield box
    finally:
        asyncio.run(box.close())


@pytest.fixture
def openai_server() -> Iterator[object]:
    """A fresh fake OpenAI-compatible server on a free loopback port."""
    from tests.fixtures.openai_server import serve

    with serve() as server:
        yield server
