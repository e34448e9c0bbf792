"""``gem-eval run --cache``: a second identical run makes no model call and scores the same."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply


def guesses(body: dict[str, object]) -> Reply:
    # GuessTheNumber-easy seeds 0 and 1 hide 7 and 2: a changing guess makes each
    # episode's transcript (and score) depend on every earlier reply.
    return Reply("\\boxed{7}" if len(body["messages"]) < 3 else "\\boxed{2}")  # type: ignore[arg-type]


def scores(run: Path) -> dict[str, object]:
    return {str(r["key"]): r["score"] for r in records(run)}


def test_a_second_run_with_cache_makes_no_call_and_scores_the_same(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = guesses
    cache = {"GEM_EVAL_CACHE": str(tmp_path / "cache")}
    args = ["run", "--suite", "smoke", "--model", "openai/fake", "--epochs", "2", "--cache"]
    args += ["--model-base-url", openai_server.base_url, "-q"]
    first = gem_eval(*args, results=tmp_path / "r", env=cache)
    assert first.returncode == 0, first.stderr + first.stdout
    calls = len(openai_server.requests)
    assert calls > 0
    assert f"response cache: 0 replies from the cache, {calls} model calls made" in first.stdout

    second = gem_eval(*args, results=tmp_path / "r", env=cache)
    assert second.returncode == 0, second.stderr + second.stdout
    assert len(openai_server.requests) == calls  # not one call more
    assert f"response cache: {calls} replies from the cache, 0 model calls made" in second.stdout
    run1, run2 = run_dirs(tmp_path / "r")
    assert scores(run1) == scores(run2) and len(scores(run1)) == 8  # 2 tasks x 2 samples x 2
    replayed = [s for r in records(run2) for s in r["trajectory"]["steps"]]  # type: ignore[index]
    assert replayed and all(s["output"]["cached"] for s in replayed)
    assert all(r["cost_usd"] in (None, 0.0) for r in records(run2))
    manifest = json.loads((run2 / "manifest.json").read_text())
    assert manifest["extra"]["cache"] == {"hits": calls, "misses": 0}

    # Served from the cache, a re-run needs no server: one warning line, same scores.
    offline = [a if a != openai_server.base_url else "http://127.0.0.1:9/v1" for a in args]
    down = gem_eval(*offline, results=tmp_path / "r", env=cache)
    assert down.returncode == 0, down.stderr + down.stdout
    assert "cannot reach the server at http://127.0.0.1:9/v1" in down.stderr
    assert "going on with the response cache" in down.stderr
    assert scores(run_dirs(tmp_path / "r")[2]) == scores(run1)

    # Without --cache the same run calls the model again.
    plain = gem_eval(*[a for a in args if a != "--cache"], results=tmp_path / "r", env=cache)
    assert plain.returncode == 0 and len(openai_server.requests) == 2 * calls


def test_a_suite_can_ask_for_the_cache(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    openai_server.handler = guesses
    suite = tmp_path / "cached.yaml"
    suite.write_text(
        textwrap.dedent("""
        name: cached
        cache: true
        defaults: {samples: 2, limits: {max_turns: 4}}
        tasks:
          - env: game:GuessTheNumber-v0-easy
        """)
    )
    env = {"GEM_EVAL_CACHE": str(tmp_path / "cache")}
    args = ["run", "--suite", str(suite), "--model", "openai/fake"]
    args += ["--model-base-url", openai_server.base_url, "-q"]
    for _ in range(2):
        result = gem_eval(*args, results=tmp_path / "r", env=env)
        assert result.returncode == 0, result.stderr + result.stdout
    first = len(openai_server.requests)
    assert first > 0
    run1, run2 = run_dirs(tmp_path / "r")
    assert scores(run1) == scores(run2)
    stats = gem_eval("cache", "stats", results=tmp_path / "r", env=env)
    assert stats.returncode == 0, stats.stderr
    assert "openai/fake" in stats.stdout
