"""Estimates before spending (gem_eval.estimate): from the history of a suite, and as
bounds from its limits, checked against runs actually played against the fake server."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console

from gem_eval.cli.estimate_view import confirm_spend, count, duration, show_estimate, usd
from gem_eval.errors import UserError
from gem_eval.estimate import Amount, RunEstimate, estimate_run
from gem_eval.models.pricing import Price, price_of
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, RunManifest, TaskSpec
from gem_eval.runner.session import RunOptions, execute_run, plan_run
from gem_eval.store import Index, RunDir
from gem_eval.suites import load_suite
from tests.fixtures.openai_server import FakeOpenAIServer, Reply

SUITE = """
name: est
defaults: {samples: 12, limits: {max_turns: 6}, generation: {max_tokens: 64}, seed: 0}
tasks:
  - env: game:GuessTheNumber-v0-easy
    id: guess
  - env: game:Wordle-v0-easy
    id: wordle
"""


def chatty(body: dict[str, Any]) -> Reply:
    """A player whose guesses and wordiness follow from the conversation so far: episodes
    differ in length and replies in size, and a run plays the same way in any order."""
    digest = hashlib.sha1(json.dumps(body["messages"], sort_keys=True).encode()).digest()
    words = ["apple", "crane", "sly", "dog", "cat", "sun", "fog", "ivy"]
    guess = (
        str(digest[0] % 10 + 1) if "number" in str(body["messages"][0]) else words[digest[1] % 8]
    )
    return Reply("Let me think. " * (digest[2] % 6) + f"\\boxed{{{guess}}}")


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "est.yaml"
    path.write_text(SUITE)
    return path


def plan_specs(suite: Path, models: list[ModelSpec], limit: int) -> list[EpisodeSpec]:
    """The episodes a run would play, planned without a run directory (as --dry-run does)."""
    return load_suite(str(suite)).episodes(models, limit=limit, epochs=None, seed=None)


def estimate(
    suite: Path, models: list[ModelSpec], limit: int, results: Path | None, **kw: Any
) -> RunEstimate:
    loaded = load_suite(str(suite))
    return estimate_run(
        plan_specs(suite, models, limit),
        results_dir=results,
        concurrency=kw.pop("concurrency", 4),
        suite=loaded.name,
        suite_hash=loaded.digest(seed=None, overrides={}),
        **kw,
    )


def play(suite: Path, models: list[ModelSpec], limit: int, results: Path) -> list[EpisodeRecord]:
    plan = plan_run(str(suite), models, RunOptions(limit=limit, concurrency=4), results)
    asyncio.run(execute_run(plan))
    return list(plan.run_dir.records())


def sums(records: list[EpisodeRecord]) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(model, task) -> (turns, input tokens, output tokens) over the records."""
    out: dict[tuple[str, str], tuple[int, int, int]] = {}
    for r in records:
        t, i, o = out.get((r.model, r.task_id), (0, 0, 0))
        out[(r.model, r.task_id)] = (t + r.turns, i + r.input_tokens, o + r.output_tokens)
    return out


def test_history_estimates_the_next_run_within_20_percent_and_bounds_hold(
    suite: Path, tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.handler = chatty
    results = tmp_path / "results"
    models = [ModelSpec(name="openai/fake", base_url=openai_server.base_url)]

    before = estimate(suite, models, 6, results)  # nothing recorded yet: bounds
    assert all(not row.from_history for row in before.rows)
    first = play(suite, models, 6, results)
    assert {r.outcome for r in first} <= {"completed", "truncated"}
    for row in before.rows:  # every ceiling holds for what was played
        turns, input_tokens, output_tokens = sums(first)[(row.model, row.task_id)]
        assert row.calls.bound and row.calls.value is not None and row.calls.value >= turns
        assert row.input_tokens.value is not None and row.input_tokens.value >= input_tokens
        assert row.output_tokens.value is not None and row.output_tokens.value >= output_tokens

    # The next run plays twice the samples (those of the first and six more).
    predicted = estimate(suite, models, 12, results)
    assert all(row.from_history for row in predicted.rows)
    assert all("6 episodes of run" in row.source for row in predicted.rows)
    second = play(suite, models, 12, results)
    real_in = sum(r.input_tokens for r in second)
    real_out = sum(r.output_tokens for r in second)
    est_in = predicted.total("input_tokens").value
    est_out = predicted.total("output_tokens").value
    assert est_in is not None and est_out is not None
    assert abs(est_in - real_in) <= 0.2 * real_in, (est_in, real_in)
    assert abs(est_out - real_out) <= 0.2 * real_out, (est_out, real_out)
    assert not predicted.total("input_tokens").bound


# --- history read from a hand-made index: exact figures -------------------------------


def record_run(
    results: Path,
    run_id: str,
    episodes: list[dict[str, Any]],
    *,
    suite: str = "est",
    suite_hash: str = "h1",
    started_at: float = 1.0,
    cache_hits: int = 0,
) -> None:
    """Record a run of ``suite`` whose episodes have the given fields (defaults: a
    completed GuessTheNumber episode of openai/fake: 2 turns, 100 + 10 tokens, 10 s)."""
    manifest = RunManifest(
        run_id=run_id,
        suite=suite,
        suite_hash=suite_hash,
        models=[ModelSpec(name="openai/fake")],
        tasks=[],
        episodes_planned=len(episodes),
        gem_eval_version="0",
        host="h",
        started_at=started_at,
        extra={"cache": {"hits": cache_hits, "misses": 1}},
    )
    RunDir.create(results, manifest)
    records = []
    for n, fields in enumerate(episodes):
        values: dict[str, Any] = {
            "model": "openai/fake", "task_id": "guess", "outcome": "completed", "turns": 2,
            "input_tokens": 100, "output_tokens": 10, "latency_s": 10.0, "cost_usd": None,
        }  # fmt: skip
        values.update(fields)
        records.append(
            EpisodeRecord(
                run_id=run_id,
                key=EpisodeSpec.make_key(values["model"], values["task_id"], n, 0),
                sample=n,
                epoch=0,
                score=None if values["outcome"] == "infra_error" else 0.0,
                success=False,
                started_at=time.time(),
                finished_at=time.time(),
                **values,
            )
        )
    with Index.for_root(results) as index:
        index.add_run(manifest)
        index.add_episodes(records)


def specs_for(
    episodes: int,
    *,
    model: str = "openai/fake",
    task: str = "guess",
    max_connections: int | None = None,
    env_id: str = "game:GuessTheNumber-v0-easy",
    **task_fields: Any,
) -> list[EpisodeSpec]:
    spec = TaskSpec(id=task, env_id=env_id, **task_fields)
    model_spec = ModelSpec(name=model, max_connections=max_connections)
    return [
        EpisodeSpec(
            key=EpisodeSpec.make_key(model, task, n, 0),
            task=spec,
            model=model_spec,
            sample=n,
            epoch=0,
            seed=n,
        )
        for n in range(episodes)
    ]


FREE = Price(0.0, 0.0, "free")


def test_history_means_scale_to_the_planned_episodes_and_skip_unscored_ones(
    tmp_path: Path,
) -> None:
    record_run(
        tmp_path,
        "r1",
        [
            {"turns": 2, "input_tokens": 100},
            {"turns": 4, "input_tokens": 300},
            {"outcome": "infra_error", "turns": 50, "input_tokens": 10**6},
        ],
    )
    est = estimate_run(
        specs_for(10), results_dir=tmp_path, concurrency=4, suite="est", pricing=lambda m: FREE
    )
    [row] = est.rows
    assert row.source == "history: 2 episodes of run r1"
    assert row.calls == Amount(30.0)  # 3 turns an episode
    assert row.input_tokens == Amount(2000.0) and row.output_tokens == Amount(100.0)
    assert row.usd == Amount(0.0)


def test_history_of_the_same_suite_hash_is_preferred_and_other_suites_ignored(
    tmp_path: Path,
) -> None:
    record_run(tmp_path, "old", [{"input_tokens": 1000}], suite_hash="other", started_at=1)
    record_run(tmp_path, "same", [{"input_tokens": 200}], suite_hash="h1", started_at=2)
    record_run(tmp_path, "elsewhere", [{"input_tokens": 9}], suite="another", started_at=3)
    kwargs: dict[str, Any] = {"results_dir": tmp_path, "concurrency": 1, "suite": "est"}
    [row] = estimate_run(specs_for(1), suite_hash="h1", **kwargs).rows
    assert (row.input_tokens, row.source) == (Amount(200.0), "history: 1 episode of run same")
    [row] = estimate_run(specs_for(1), suite_hash="h2", **kwargs).rows
    assert row.input_tokens == Amount(600.0)
    assert row.source == "history: 2 episodes of 2 runs (latest same), suite hash differs"


def test_recorded_costs_are_used_when_every_episode_has_one(tmp_path: Path) -> None:
    record_run(tmp_path, "r1", [{"cost_usd": 0.01}, {"cost_usd": 0.03}])
    unknown = Price(None, None, "unknown")
    [row] = estimate_run(
        specs_for(5), results_dir=tmp_path, concurrency=1, suite="est", pricing=lambda m: unknown
    ).rows
    assert row.usd.value == pytest.approx(0.10) and not row.usd.bound


def test_runs_that_hit_the_response_cache_give_tokens_not_time_or_money(
    tmp_path: Path,
) -> None:
    record_run(tmp_path, "paid", [{"latency_s": 10.0, "cost_usd": 0.5}], started_at=1)
    cheap = {"latency_s": 0.0, "cost_usd": 0.0, "input_tokens": 300}
    record_run(tmp_path, "cached", [cheap], started_at=2, cache_hits=2)
    unknown = Price(None, None, "unknown")
    [row] = estimate_run(
        specs_for(2), results_dir=tmp_path, concurrency=1, suite="est", pricing=lambda m: unknown
    ).rows
    assert row.input_tokens == Amount(400.0)  # (100 + 300) / 2 an episode
    assert row.usd == Amount(1.0) and row.wall_s == Amount(20.0)  # from the paid run alone
    only_cached = tmp_path / "only-cached"
    record_run(only_cached, "cached", [cheap], cache_hits=2)
    [row] = estimate_run(
        specs_for(2), results_dir=only_cached, concurrency=1, suite="est", pricing=lambda m: FREE
    ).rows
    assert row.input_tokens == Amount(600.0) and row.wall_s == Amount(None)


@pytest.mark.parametrize(
    ("concurrency", "wall"), [(1, 80.0), (2, 40.0), (4, 20.0), (8, 10.0), (64, 10.0)]
)
def test_wall_time_divides_by_the_episodes_in_flight(
    tmp_path: Path, concurrency: int, wall: float
) -> None:
    record_run(tmp_path, "r1", [{"latency_s": 10.0}])  # 8 episodes of 10 s each
    est = estimate_run(specs_for(8), results_dir=tmp_path, concurrency=concurrency, suite="est")
    assert est.rows[0].wall_s == Amount(wall) and est.wall_s == Amount(wall)


def test_rows_share_the_run_concurrency_and_a_model_connection_limit_holds(
    tmp_path: Path,
) -> None:
    record_run(tmp_path, "r1", [{"latency_s": 10.0}, {"task_id": "other", "latency_s": 10.0}])
    specs = specs_for(4) + specs_for(4, task="other")
    est = estimate_run(specs, results_dir=tmp_path, concurrency=4, suite="est")
    assert est.wall_s == Amount(20.0)  # 80 episode-seconds, 4 at a time
    limited = specs_for(4, max_connections=1)
    est = estimate_run(limited, results_dir=tmp_path, concurrency=4, suite="est")
    assert est.wall_s == Amount(40.0)  # one at a time, whatever --concurrency says
    # Both rows of a model with one connection take turns on it: 80 episode-seconds.
    limited += specs_for(4, task="other", max_connections=1)
    est = estimate_run(limited, results_dir=tmp_path, concurrency=4, suite="est")
    assert est.wall_s == Amount(80.0)


def test_a_local_model_plays_one_episode_at_a_time(tmp_path: Path) -> None:
    limits = {"max_turns": 4, "max_time_s": 30}
    specs = specs_for(2, model="local/gemma3-270m", limits=limits)
    specs += specs_for(2, model="local/gemma3-270m", task="other", limits=limits)
    est = estimate_run(specs, results_dir=None, concurrency=64, pricing=lambda m: FREE)
    assert [row.parallel for row in est.rows] == [1, 1]
    assert est.wall_s == Amount(120.0, bound=True)  # 4 episodes of at most 30 s, in turn


# --- bounds and prices ----------------------------------------------------------------


def test_without_max_tokens_output_and_cost_are_unbounded(tmp_path: Path) -> None:
    priced = Price(1e-6, 2e-6, "a price")
    est = estimate_run(
        specs_for(2, limits={"max_turns": 3}),
        results_dir=tmp_path,
        concurrency=2,
        pricing=lambda m: priced,
    )
    [row] = est.rows
    assert row.calls == Amount(6, bound=True)
    assert row.output_tokens.unbounded and row.usd.unbounded
    assert est.exceeds(1000.0) is not None and "unbounded" in str(est.exceeds(1000.0))
    assert row.wall_s == Amount(None)  # no history, no max_time_s


def test_bounds_follow_the_prompt_limits_and_the_episode_token_cap(tmp_path: Path) -> None:
    generation = {"max_tokens": 50}
    loose = estimate_run(
        specs_for(1, limits={"max_turns": 4, "max_time_s": 30}, generation=generation),
        results_dir=None,
        concurrency=1,
        pricing=lambda m: FREE,
    ).rows[0]
    assert loose.prompt_note is not None
    prompt = int(loose.prompt_note.split("≈ ")[1].split()[0])
    assert loose.output_tokens == Amount(200, bound=True)
    # Call t reads the prompt and the t - 1 replies and observations before it.
    assert loose.input_tokens.value is not None
    assert loose.input_tokens.value >= 4 * prompt + 6 * (50 + prompt)
    assert loose.wall_s == Amount(30.0, bound=True)
    capped = estimate_run(
        specs_for(1, limits={"max_turns": 4, "max_tokens": 100}, generation=generation),
        results_dir=None,
        concurrency=1,
        pricing=lambda m: FREE,
    ).rows[0]
    assert capped.output_tokens == Amount(150, bound=True)  # the cap, and one more reply
    assert capped.input_tokens.value is not None
    assert capped.input_tokens.value < loose.input_tokens.value


def test_the_envs_own_turn_limit_bounds_the_calls_when_lower_and_without_tools() -> None:
    def row(**fields: Any) -> Any:
        specs = specs_for(3, generation={"max_tokens": 50}, **fields)
        [found] = estimate_run(specs, results_dir=None, concurrency=1, pricing=lambda m: FREE).rows
        return found

    game = row(limits={"max_turns": 50})  # GuessTheNumber-easy allows 4 guesses
    assert game.calls == Amount(12, bound=True) and game.output_tokens == Amount(600, bound=True)
    assert "the env's own limit, 4 turns" in game.source
    assert row(limits={"max_turns": 2}).calls == Amount(6, bound=True)  # the task's is lower
    assert row(limits={"max_turns": None}).calls == Amount(12, bound=True)
    assert row(limits={"max_turns": 50}, env_kwargs={"max_turns": 7}).calls.value == 21
    # A tool call is a model call that takes no step: only max_turns bounds the calls.
    assert row(limits={"max_turns": 50}, tools=["python"]).calls == Amount(150, bound=True)
    assert row(model="oracle", limits={"max_turns": 50}).calls == Amount(12, bound=True)
    question = {"question": "What is 6 * 7?", "answer": "42"}
    math = row(env_id="math:Math-v0", env_kwargs=question, limits={"max_turns": 50})
    assert math.calls == Amount(3, bound=True)  # one answer a question
    assert row(env_id="math:Math-v0", env_kwargs={**question, "max_turns": 3}).calls.value == 9


def test_without_max_tokens_the_model_limits_from_the_price_map_bound_each_call() -> None:
    specs = specs_for(1, limits={"max_turns": 10}, env_kwargs={"max_turns": 10})
    roomy = Price(1e-6, 1e-6, "p", max_output_tokens=100, max_input_tokens=10**6)
    tight = Price(1e-6, 1e-6, "p", max_output_tokens=100, max_input_tokens=300)
    [wide] = estimate_run(specs, results_dir=None, concurrency=1, pricing=lambda m: roomy).rows
    [narrow] = estimate_run(specs, results_dir=None, concurrency=1, pricing=lambda m: tight).rows
    assert wide.output_tokens == Amount(1000, bound=True) == narrow.output_tokens
    assert "the model's most, 100 a call" in wide.source
    assert narrow.input_tokens.value is not None and wide.input_tokens.value is not None
    assert narrow.input_tokens.value <= 10 * 300 < wide.input_tokens.value


def test_prices_local_reference_self_hosted_unknown_and_litellm() -> None:
    assert price_of(ModelSpec(name="oracle")).cost(10, 10) == 0.0
    assert price_of(ModelSpec(name="local/gemma3-270m")).cost(10, 10) == 0.0
    assert price_of(ModelSpec(name="openai/x", backend="openai", base_url="http://h")).known
    unknown = price_of(ModelSpec(name="openai/no-such-model-anywhere"))
    assert not unknown.known and "no litellm price" in unknown.note
    hosted = price_of(ModelSpec(name="openai/no-such-model-anywhere", base_url="http://h"))
    assert hosted.cost(10, 10) == 0.0 and "self-hosted" in hosted.note
    from gem_eval.models.litellm_model import import_litellm

    info = import_litellm().get_model_info("openai/gpt-4o")
    gpt = price_of(ModelSpec(name="openai/gpt-4o"))
    assert gpt.max_output_tokens == info["max_output_tokens"]
    assert gpt.cost(1000, 100) == pytest.approx(
        1000 * info["input_cost_per_token"] + 100 * info["output_cost_per_token"]
    )


def test_an_unknown_price_needs_confirming_and_a_known_one_only_above_the_threshold(
    tmp_path: Path,
) -> None:
    record_run(tmp_path, "r1", [{"input_tokens": 1000, "output_tokens": 100}])
    kwargs: dict[str, Any] = {"results_dir": tmp_path, "concurrency": 1, "suite": "est"}
    priced = Price(1e-6, 1e-5, "a price")  # $0.002 an episode
    est = estimate_run(specs_for(10), pricing=lambda m: priced, **kwargs)
    assert est.total_usd == pytest.approx(0.02) and not est.unpriced
    assert est.exceeds(0.05) is None
    assert "$0.0200" in str(est.exceeds(0.01))
    unknown = estimate_run(specs_for(10), pricing=lambda m: Price(None, None, "?"), **kwargs)
    assert unknown.rows[0].usd == Amount(None) and unknown.total_usd == 0.0
    assert "unknown" in str(unknown.exceeds(100.0))


def test_confirm_spend_refuses_without_a_terminal_unless_yes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_run(tmp_path, "r1", [{"input_tokens": 1000, "output_tokens": 100}])
    priced = Price(1e-6, 1e-5, "a price")
    est = estimate_run(
        specs_for(10), results_dir=tmp_path, concurrency=1, suite="est", pricing=lambda m: priced
    )
    confirm_spend(est, 1.0, yes=False, interactive=False)  # under: goes on
    with pytest.raises(UserError, match="--yes"):
        confirm_spend(est, 0.01, yes=False, interactive=False)
    confirm_spend(est, 0.01, yes=True, interactive=False)
    asked: list[str] = []
    answer = [True]
    monkeypatch.setattr("typer.confirm", lambda text: asked.append(text) or answer[0])
    monkeypatch.setattr("gem_eval.cli.estimate_view.show_estimate", lambda e: None)
    confirm_spend(est, 0.01, yes=False, interactive=True)  # yes: goes on
    assert len(asked) == 1 and "$0.0200" in asked[0]
    answer[0] = False  # no: not run, exit 0 (no Click "Aborted!", no exit 1)
    with pytest.raises(typer.Exit) as stop:
        confirm_spend(est, 0.01, yes=False, interactive=True)
    assert stop.value.exit_code == 0


def test_the_table_marks_ceilings_unbounded_and_unknown_figures(tmp_path: Path) -> None:
    record_run(tmp_path, "r1", [{"input_tokens": 1234, "output_tokens": 56}])
    specs = specs_for(1) + specs_for(2, task="fresh", limits={"max_turns": 3})
    specs += specs_for(1, task="capped", limits={"max_turns": 3}, generation={"max_tokens": 9})
    unpriced = Price(None, None, "no price known")
    est = estimate_run(
        specs, results_dir=tmp_path, concurrency=1, suite="est", pricing=lambda m: unpriced
    )
    console = Console(record=True, width=250)
    show_estimate(est, console)
    text = console.export_text()
    guess, fresh, capped = (
        next(line for line in text.splitlines() if f" {task} " in line)
        for task in ("guess", "fresh", "capped")
    )
    assert "1,234" in guess and "≤" not in guess and "history: 1 episode of run r1" in guess
    assert "≤ 6" in fresh and "unbounded" in fresh  # calls bounded, output not
    assert "≤ 27" in capped  # 3 calls of 9 tokens at most
    assert "unknown" in capped  # no price
    assert "openai/fake: no price known" in text
    assert "fresh: prompt ≈" in text


def figures(est: RunEstimate) -> list[str]:
    """Every number cell of the table: the rows' figures and the totals."""
    cells = []
    for row in est.rows:
        cells += [count(row.calls), count(row.input_tokens), count(row.output_tokens)]
        cells += [usd(row.usd), duration(row.wall_s)]
    for field in ("calls", "input_tokens", "output_tokens"):
        cells.append(count(est.total(field)))
    return [*cells, usd(est.total("usd")), duration(est.wall_s)]


@pytest.mark.parametrize(
    "model", ["openai/gpt-4o-mini", "openrouter/meta-llama/llama-3.1-405b-instruct-turbo"]
)
def test_at_80_columns_every_figure_is_whole_and_the_sources_move_below(
    tmp_path: Path, model: str
) -> None:
    record_run(tmp_path, "2026-12-03T10-00-00-est-abc123", [{"input_tokens": 1234}])
    specs = specs_for(12) + specs_for(
        40, task="wordle-hard", limits={"max_turns": 6}, generation={"max_tokens": 400_000}
    )
    specs += specs_for(40, model=model, task="wordle-hard", limits={"max_turns": 6})
    priced = Price(1.5e-7, 6e-7, "litellm price: $0.15/M in, $0.60/M out")
    est = estimate_run(
        specs, results_dir=tmp_path, concurrency=8, suite="est", pricing=lambda m: priced
    )
    console = Console(record=True, width=80)
    show_estimate(est, console)
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert "…" not in text
    for cell in figures(est):  # each on one line, not cut, not folded
        assert any(cell in line for line in lines), (cell, text)
    below = " ".join(text.split())  # the notes under the table, wrapped at 80
    assert "guess: from history: 1 episode of run 2026-12-03T10-00-00-est-abc123" in below
    assert "history:" not in next(line for line in lines if " guess " in line)
    if len(model) < 30:  # the ids fit as well: whole, on one line each
        assert all(any(i in line for line in lines) for i in (model, "wordle-hard", "guess"))
    wide = Console(record=True, width=250)
    show_estimate(est, wide)  # wide enough: the sources stay a column
    guess = next(line for line in wide.export_text().splitlines() if " guess " in line)
    assert "history: 1 episode of run 2026-12-03T10-00-00-est-abc123" in guess


def test_a_hosted_task_is_measured_by_its_instruction_without_starting_a_sandbox() -> None:
    from gem_eval.envs.hosted import HostedEnv
    from gem_eval.estimate.prompt import FirstLook, first_look, measure_prompt
    from gem_eval.registration import make

    [spec, *_] = load_suite("terminal-bench").episodes([ModelSpec(name="m")], limit=1)
    env = make(spec.task.env_id, **spec.task.env_kwargs, **spec.sample_kwargs)
    assert isinstance(env.unwrapped, HostedEnv)
    instruction = env.unwrapped.instruction()
    env.close()
    assert first_look(spec) == FirstLook(instruction, 1) and len(instruction) > 200
    prompt = measure_prompt(spec.task, [spec])
    assert prompt.tokens >= len(instruction) // 4
    assert prompt.turn_tokens >= 65536 // 4  # its tools' output, up to the sandbox's limit
    assert prompt.env_turns is None  # one step, but tool calls between: calls unbounded
