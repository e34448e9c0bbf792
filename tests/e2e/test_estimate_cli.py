"""``gem-eval run --dry-run`` and ``--confirm-above``: an estimate before any spending."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply


def guesses(body: dict[str, object]) -> Reply:
    return Reply("\\boxed{7}" if len(body["messages"]) < 3 else "\\boxed{2}")  # type: ignore[arg-type]


def total_tokens(stdout: str) -> tuple[int, int]:
    """The input and output tokens of the estimate table's total row."""
    row = next(line for line in stdout.splitlines() if "total" in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    numbers = [int(re.sub(r"[^0-9]", "", c)) for c in cells[1:5]]  # episodes, calls, in, out
    return numbers[2], numbers[3]


def test_dry_run_plays_nothing_and_estimates_from_the_last_run(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = guesses
    base = ["--suite", "smoke", "--model", "openai/fake", "--model-base-url"]
    base += [openai_server.base_url]
    results = tmp_path / "r"

    dry = gem_eval("run", *base, "--dry-run", results=results)
    assert dry.returncode == 0, dry.stderr + dry.stdout
    assert not results.exists() and not openai_server.requests  # nothing played or created
    assert "bound" in dry.stdout and "≤" in dry.stdout  # no history: ceilings, labelled

    first = gem_eval("run", *base, "-q", results=results)
    assert first.returncode == 0, first.stderr
    calls = len(openai_server.requests)
    played = records(run_dirs(results)[0])
    real_in = sum(int(r["input_tokens"]) for r in played)  # type: ignore[call-overload]
    real_out = sum(int(r["output_tokens"]) for r in played)  # type: ignore[call-overload]

    dry = gem_eval("run", *base, "--dry-run", results=results)
    assert dry.returncode == 0, dry.stderr + dry.stdout
    assert len(openai_server.requests) == calls and len(run_dirs(results)) == 1
    assert "history" in dry.stdout
    est_in, est_out = total_tokens(dry.stdout)
    assert abs(est_in - real_in) <= 0.2 * real_in, (est_in, real_in)
    assert abs(est_out - real_out) <= 0.2 * real_out, (est_out, real_out)


def test_confirm_above_refuses_without_a_terminal_unless_yes(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = guesses
    # A model litellm prices, served by the fixture server: the estimate has a cost.
    base = ["run", "--suite", "smoke", "--model", "openai/gpt-4o", "--limit", "1"]
    base += ["--model-base-url", openai_server.base_url, "--confirm-above", "0.000001", "-q"]
    results = tmp_path / "r"
    refused = gem_eval(*base, results=results)
    assert refused.returncode == 2, refused.stderr + refused.stdout
    assert "over $0.0000 (--confirm-above): pass --yes to run it anyway" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not results.exists() and not openai_server.requests

    cheap = gem_eval(*base[:-3], "--confirm-above", "100", "-q", results=results)
    assert cheap.returncode == 0, cheap.stderr
    agreed = gem_eval(*base, "--yes", results=results)
    assert agreed.returncode == 0, agreed.stderr
    assert len(run_dirs(results)) == 2


def own_turn_limits() -> dict[str, int]:
    """Task id -> the turn limit its game variant sets, for the bundled games suite."""
    from gem_eval.envs import GAME_VARIANTS
    from gem_eval.records import ModelSpec
    from gem_eval.suites import load_suite

    limits = {}
    for spec in load_suite("games").episodes([ModelSpec(name="m")], limit=1):
        task = spec.task
        name, variant = task.env_id.removeprefix("game:").split("-v0-")
        setting = GAME_VARIANTS[name][2][variant]["max_turns"]
        limits[task.id] = int(task.env_kwargs.get("max_turns", setting))
    return limits


def estimate_rows(stdout: str) -> dict[str, list[str]]:
    """Task id -> the figure cells of its row (episodes, calls, input, output, USD ...)."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.split("│") if c.strip()]
        if len(cells) > 3 and cells[0] != "total":
            rows[cells[1]] = cells[2:]
    return rows


def whole(cell: str) -> int:
    return int(re.sub(r"[^0-9]", "", cell))


GAMES = ["run", "--suite", "games", "--model", "openai/gpt-4o-mini", "-M", "max_tokens=256"]
GAMES += ["--limit", "1"]
CONFIRM_GAMES = "0.5"
"""USD: a sensible allowance for 9 short games of a cheap model. The ceiling is ~$0.14
with each game's own turn limit; with the suite's max_turns (60) it was ~$0.99."""


def test_dry_run_bounds_each_game_by_its_own_turn_limit(tmp_path: Path) -> None:
    dry = gem_eval(*GAMES, "--dry-run", results=tmp_path / "r", env={"COLUMNS": "300"})
    assert dry.returncode == 0, dry.stderr + dry.stdout
    rows = estimate_rows(dry.stdout)
    limits = own_turn_limits()
    assert set(rows) == set(limits), dry.stdout
    for task_id, limit in limits.items():
        episodes, calls = whole(rows[task_id][0]), whole(rows[task_id][1])
        assert calls == episodes * limit, (task_id, rows[task_id])  # not the suite's 60
        assert f"the env's own limit, {limit} turns" in rows[task_id][-1]


def test_confirm_above_a_small_amount_lets_the_games_suite_run(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = guesses
    results = tmp_path / "r"
    base = [*GAMES, "--model-base-url", openai_server.base_url, "-q"]
    ran = gem_eval(*base, "--confirm-above", CONFIRM_GAMES, results=results)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert "--confirm-above" not in ran.stderr
    [run] = run_dirs(results)
    played = records(run)
    assert len(played) == len(own_turn_limits())
    limits = own_turn_limits()
    for record in played:  # every game ended it within its own limit, as estimated
        assert int(record["turns"]) <= limits[str(record["task_id"])]  # type: ignore[call-overload]
