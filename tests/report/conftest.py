"""A recorded two-model run (two runs of it: a baseline and a new one) shared by the
report's tests, and the headless browser that reads its pages."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI
from tests.report.recorded import record_run

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "results" / "screenshots"
"""Where the browser tests save a screenshot of each page (ignored by git; CI keeps it)."""


@dataclass(frozen=True)
class Recorded:
    results: Path
    base: str
    new: str


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Two runs of the demo suite (same settings) for both scripted models."""
    from tests.fixtures.openai_server import serve

    results = tmp_path_factory.mktemp("report") / "results"
    results.mkdir()
    with serve() as server:
        base = record_run(server, results)
        new = record_run(server, results)
    return Recorded(results, base, new)


def _browser_problem() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    if not CHROMIUM.exists():
        return f"no {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium driven by Playwright; missing in CI fails, never skips.

    Module-scoped: while Playwright's sync API is open, an event loop runs in the main
    thread, and every later test's ``asyncio.run`` would fail; it closes with the module.
    """
    problem = _browser_problem()
    if problem:
        if IN_CI:
            pytest.fail(f"CI=true, but the browser tests cannot run: {problem}", pytrace=False)
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # --no-sandbox: Chromium refuses to run as root (CI containers) with its sandbox.
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()
