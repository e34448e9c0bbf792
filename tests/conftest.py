"""Shared pytest fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# litellm must never reach the network, in any test that imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def openai_server() -> Iterator[object]:
    """A fresh fake OpenAI-compatible server on a free loopback port."""
    from tests.fixtures.openai_server import serve

    with serve() as server:
        yield server
