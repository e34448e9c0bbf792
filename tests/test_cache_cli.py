"""``gem-eval cache stats`` and ``cache clear`` over a cache filled by real model calls."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gem_eval.cli.app import app
from gem_eval.cli.cache import parse_age
from gem_eval.errors import UserError
from gem_eval.models import get_model
from gem_eval.models.response_cache import CachedModel, ResponseCache
from tests.fixtures.openai_server import FakeOpenAIServer

runner = CliRunner()
DAY = 86400.0


@pytest.fixture
def filled(
    openai_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A cache (``GEM_EVAL_CACHE``) with two replies of ``openai/a`` (one ten days old)
    and one of ``openai/b``."""
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path))
    stamp = [time.time() - 10 * DAY]
    cache = ResponseCache(clock=lambda: stamp[0])

    async def ask(spec: str, epoch: int) -> None:
        model = get_model(spec, base_url=openai_server.base_url, api_key="x", backend="openai")
        async with model:
            cached = CachedModel(model, cache, salt={"epoch": epoch})
            await cached.generate([{"role": "user", "content": "hi"}])

    asyncio.run(ask("openai/a", 0))
    stamp[0] = time.time()
    asyncio.run(ask("openai/a", 1))
    asyncio.run(ask("openai/b", 0))
    cache.close()
    assert len(openai_server.requests) == 3
    return cache.path


def entries() -> dict[str, int]:
    cache = ResponseCache()
    try:
        return cache.stats().by_model
    finally:
        cache.close()


def test_stats_shows_entries_by_model(filled: Path) -> None:
    result = runner.invoke(app, ["cache", "stats"])
    assert result.exit_code == 0, result.output
    assert str(filled) in result.output.replace("\n", "")
    assert "3 entries" in result.output
    rows = {
        line.split()[1]: line.split()[3] for line in result.output.splitlines() if "openai/" in line
    }
    assert rows == {"openai/a": "2", "openai/b": "1"}


def test_clear_older_than_removes_only_old_entries(filled: Path) -> None:
    result = runner.invoke(app, ["cache", "clear", "--older-than", "7d", "--yes"])
    assert result.exit_code == 0, result.output
    assert "removed 1 cached replies" in result.output
    assert entries() == {"openai/a": 1, "openai/b": 1}


def test_clear_asks_first_on_a_terminal_unless_yes(
    filled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gem_eval.cli.cache._interactive", lambda: True)
    refused = runner.invoke(app, ["cache", "clear", "--model", "openai/a"], input="n\n")
    assert refused.exit_code == 0, refused.output
    assert "remove 2 cached replies" in refused.output
    assert refused.output.splitlines()[-1] == "not cleared: nothing removed"
    assert "Aborted" not in refused.output
    assert entries() == {"openai/a": 2, "openai/b": 1}
    agreed = runner.invoke(app, ["cache", "clear", "--model", "openai/a"], input="y\n")
    assert agreed.exit_code == 0 and "removed 2 cached replies" in agreed.output
    assert entries() == {"openai/b": 1}
    everything = runner.invoke(app, ["cache", "clear", "--yes"])
    assert everything.exit_code == 0 and entries() == {}


def test_clear_without_a_terminal_is_refused_in_one_line_unless_yes(filled: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gem_eval", "cache", "clear", "--older-than", "7d"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2, result
    assert result.stderr.strip().splitlines() == [
        f"error: remove 1 cached replies from {filled}: not a terminal to ask, pass --yes"
    ]
    assert "Aborted" not in result.stdout + result.stderr
    assert entries() == {"openai/a": 2, "openai/b": 1}


def test_clear_of_a_model_not_cached_names_the_models_that_are(filled: Path) -> None:
    result = runner.invoke(app, ["cache", "clear", "--model", "nosuch", "--yes"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == (
        "removed 0 cached replies (no reply of nosuch; the cache holds replies of: "
        "openai/a, openai/b)"
    )
    old_only = runner.invoke(app, ["cache", "clear", "--model", "openai/b", "--older-than", "7d"])
    assert old_only.output.strip() == "removed 0 cached replies"  # the model is there


def test_looking_at_a_cache_not_made_yet_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "never-used"
    monkeypatch.setenv("GEM_EVAL_CACHE", str(root))
    for argv in (["cache", "stats"], ["cache", "clear", "--yes"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, result.output
        expected = f"no response cache yet at {root / 'responses' / 'responses.sqlite'}"
        assert result.output.replace("\n", "") == expected
    assert not root.exists()


def test_help_names_the_cache_file_and_every_unit() -> None:
    from gem_eval.cli.cache import _UNITS

    shown = runner.invoke(app, ["cache", "--help"]).output
    assert "GEM_EVAL_CACHE" in shown and "responses/responses.sqlite" in shown
    clear_help = " ".join(runner.invoke(app, ["cache", "clear", "--help"]).output.split())
    units = clear_help.split("Units:")[1]
    assert all(f"{unit} (" in units for unit in _UNITS)


def test_ages_parse_and_bad_ones_are_one_line_user_errors(tmp_path: Path) -> None:
    assert [parse_age(a) for a in ("30m", "12h", "7d", "1.5w", "10s")] == [
        1800,
        43200,
        7 * DAY,
        1.5 * 7 * DAY,
        10,
    ]
    with pytest.raises(UserError):
        parse_age("7 days")
    result = subprocess.run(
        [sys.executable, "-m", "gem_eval", "cache", "clear", "--older-than", "7x"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "GEM_EVAL_CACHE": str(tmp_path)},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --older-than '7x': write a number and a unit, e.g. 30m, 12h, 7d "
        "(units: s, m, h, d, w)"
    ]
