"""A whole run through the library path the CLI takes (plan_run + execute_run): failures
of gem-eval and of the configuration, the run's status, and what --resume may change."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gem_eval.errors import UserError
from gem_eval.models import ScriptedModel
from gem_eval.models.base import GenerateConfig, Message, Model, ModelOutput, ToolSchema, Usage
from gem_eval.records import ModelSpec
from gem_eval.runner import EXIT_CONFIG_ERROR, EXIT_HARNESS_ERROR, EXIT_OK
from gem_eval.runner.resume import ResumeRequest
from gem_eval.runner.runner import RunSummary
from gem_eval.runner.session import RunOptions, execute_run, plan_run
from gem_eval.store import RunDir

SUITE = """
name: tiny
defaults: {samples: 3, limits: {max_turns: 4}, seed: 0}
tasks:
  - env: game:GuessTheNumber-v0-easy
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(SUITE)
    return path


class Broken(Model):
    """A model whose code has a bug (as a client library's unexpected exception would)."""

    name = "broken"

    async def generate(
        self,
        messages: list[Message],
        tools: list[ToolSchema] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        return ModelOutput(text=messages["oops"])  # type: ignore[call-overload]


def play(
    suite: Path, results: Path, factory: Any, models: list[str], **options: Any
) -> tuple[RunSummary, RunDir]:
    plan = plan_run(str(suite), [ModelSpec(name=m) for m in models], RunOptions(**options), results)
    summary = asyncio.run(execute_run(plan, model_factory=factory))
    return summary, plan.run_dir


def test_a_bug_in_gem_eval_is_a_harness_error_and_the_run_fails(
    suite: Path, tmp_path: Path
) -> None:
    summary, run_dir = play(suite, tmp_path / "r", lambda spec: Broken(), ["broken"])
    assert summary.exit_code == EXIT_HARNESS_ERROR and summary.outcomes["harness_error"] == 3
    manifest = run_dir.read_manifest()
    assert manifest.status == "failed"
    assert manifest.error is not None and "harness_error" in manifest.error
    records = list(run_dir.records())
    assert all(r.outcome == "harness_error" and r.score is None for r in records)
    trajectory = records[0].trajectory
    assert trajectory is not None and "TypeError" in (trajectory.traceback or "")
    # --resume plays them again (after the bug is fixed).
    again = plan_run(None, [], RunOptions(), tmp_path / "r", resume=manifest.run_id)
    assert len(again.todo) == 3


def test_a_run_where_every_episode_errored_is_not_finished(suite: Path, tmp_path: Path) -> None:
    from gem_eval.errors import ModelCallError

    failing = ScriptedModel([ModelCallError("503 down", status=503, transient=True)])
    summary, run_dir = play(suite, tmp_path / "r", lambda spec: failing, ["scripted"])
    assert summary.exit_code == 3 and summary.outcomes["infra_error"] == 3
    assert run_dir.read_manifest().status == "incomplete"


def test_resume_may_change_how_models_are_reached_not_what_is_measured(
    suite: Path, tmp_path: Path
) -> None:
    results = tmp_path / "r"
    plan = plan_run(
        str(suite),
        [ModelSpec(name="openai/x", base_url="http://127.0.0.1:1/v1", args={"temperature": 0})],
        RunOptions(seed=0, concurrency=8),
        results,
    )
    run_id = plan.manifest.run_id
    RunDir.create(results, plan.manifest)  # a run that started

    moved = ResumeRequest(
        connection={"base_url": "http://127.0.0.1:2/v1", "timeout_s": 30.0},
        options={"concurrency": 16},
    )
    resumed = plan_run(None, [], RunOptions(), results, resume=run_id, request=moved)
    model = resumed.manifest.models[0]
    assert (model.base_url, model.timeout_s) == ("http://127.0.0.1:2/v1", 30.0)
    assert model.args == {"temperature": 0}  # kept
    assert resumed.manifest.extra["options"]["concurrency"] == 16
    session = resumed.manifest.sessions[-1]
    assert session["changed"] == {
        "--model-base-url": "http://127.0.0.1:2/v1",
        "--timeout": 30.0,
        "--concurrency": 16,
    }
    assert session["forced"] == {}

    for request, flag in [
        (ResumeRequest(options={"seed": 5}), "--seed"),
        (ResumeRequest(model_args={"temperature": 1.0}), "-M"),
        (ResumeRequest(options={"overrides": {"limits": {"max_turns": 9}}}), "--max-turns"),
        (ResumeRequest(options={"sandbox": "local"}), "--sandbox"),
    ]:
        with pytest.raises(UserError, match=f"{flag} would change it"):
            plan_run(None, [], RunOptions(), results, resume=run_id, request=request)
    # The same value is no change.
    plan_run(
        None, [], RunOptions(), results, resume=run_id, request=ResumeRequest(options={"seed": 0})
    )
    with pytest.raises(UserError, match="played suite 'tiny'"):
        plan_run(
            None, [], RunOptions(), results, resume=run_id, request=ResumeRequest(suite="games")
        )
    with pytest.raises(UserError, match="run's models"):
        plan_run(
            None,
            [],
            RunOptions(),
            results,
            resume=run_id,
            request=ResumeRequest(models=["openai/y"]),
        )

    forced = ResumeRequest(options={"seed": 5}, force=True)
    again = plan_run(None, [], RunOptions(), results, resume=run_id, request=forced)
    assert again.manifest.extra["options"]["seed"] == 5
    assert again.manifest.sessions[-1]["forced"] == {"--seed": 5}
    assert again.manifest.suite_hash != plan.manifest.suite_hash  # what it measures changed


def test_a_changed_suite_file_is_refused_on_resume_unless_forced(
    suite: Path, tmp_path: Path
) -> None:
    results = tmp_path / "r"
    plan = plan_run(str(suite), [ModelSpec(name="m")], RunOptions(), results)
    RunDir.create(results, plan.manifest)  # a run that started
    suite.write_text(SUITE.replace("max_turns: 4", "max_turns: 5"))
    with pytest.raises(UserError, match="--suite would change it"):
        plan_run(None, [], RunOptions(), results, resume=plan.manifest.run_id)
    forced = ResumeRequest(force=True)
    again = plan_run(None, [], RunOptions(), results, resume=plan.manifest.run_id, request=forced)
    assert "--suite" in again.manifest.sessions[-1]["forced"]


def test_a_model_server_that_refuses_the_key_stops_the_run_before_any_episode(
    suite: Path, tmp_path: Path, openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server answers 401 to everything (a vLLM started with --api-key)."""
    from gem_eval.errors import ModelConfigError

    openai_server.api_key = "right-key"
    monkeypatch.setenv("MY_VLLM_CREDENTIAL", "wrong-key")
    spec = ModelSpec(
        name="openai/x", base_url=openai_server.base_url, api_key_env="MY_VLLM_CREDENTIAL"
    )
    plan = plan_run(str(suite), [spec], RunOptions(), tmp_path / "r")
    with pytest.raises(ModelConfigError, match="refused the API key"):
        asyncio.run(execute_run(plan))
    assert not (tmp_path / "r").exists()  # a run that never started leaves nothing


def test_the_right_key_from_a_named_variable_reaches_the_server_and_no_record(
    suite: Path, tmp_path: Path, openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fixtures.openai_server import Reply

    openai_server.handler = lambda body: Reply("\\boxed{7}")
    openai_server.api_key = "right-key-0123456789"
    monkeypatch.setenv("MY_VLLM_CREDENTIAL", "right-key-0123456789")
    spec = ModelSpec(
        name="openai/x", base_url=openai_server.base_url, api_key_env="MY_VLLM_CREDENTIAL"
    )
    plan = plan_run(str(suite), [spec], RunOptions(), tmp_path / "r")
    summary = asyncio.run(execute_run(plan))
    assert summary.exit_code == EXIT_OK
    assert {r.authorization for r in openai_server.requests} == {"Bearer right-key-0123456789"}
    text = (plan.run_dir.path / "episodes.jsonl").read_text()
    text += (plan.run_dir.path / "manifest.json").read_text()
    assert "right-key-0123456789" not in text and "MY_VLLM_CREDENTIAL" in text


def test_an_unknown_model_stops_the_run_at_the_first_refusal(
    suite: Path, tmp_path: Path, openai_server: Any
) -> None:
    """/models answers (the server is up) but the chat call is a 404: stop, exit 2."""
    from tests.fixtures.openai_server import Fault

    openai_server.handler = lambda body: Fault.status(404)
    spec = ModelSpec(name="openai/no-such-model", base_url=openai_server.base_url)
    plan = plan_run(str(suite), [spec], RunOptions(concurrency=1), tmp_path / "r")
    summary = asyncio.run(execute_run(plan))
    assert summary.exit_code == EXIT_CONFIG_ERROR
    assert summary.stopped_by is not None and "openai/no-such-model" in summary.stopped_by
    assert "404" in summary.stopped_by
    records = list(plan.run_dir.records())
    assert len(openai_server.requests) == 1  # one refusal, then no other episode started
    assert not any(r.scored for r in records)
    assert plan.run_dir.read_manifest().status == "failed"


def test_resume_gives_up_on_an_episode_after_max_attempts(suite: Path, tmp_path: Path) -> None:
    """An episode that keeps ending in infra_error is replayed at most --max-attempts times
    in all; its last record says so, and so does the leaderboard."""
    from gem_eval.errors import ModelCallError
    from gem_eval.metrics import summarize
    from gem_eval.store import Index

    results = tmp_path / "r"
    failing = ScriptedModel([ModelCallError("503 down", status=503, transient=True)])
    plan = plan_run(str(suite), [ModelSpec(name="scripted")], RunOptions(max_attempts=2), results)
    run_id = plan.manifest.run_id
    seen = []
    for _ in range(4):
        again = plan_run(None, [], RunOptions(), results, resume=run_id) if seen else plan
        seen.append(len(again.todo))
        if not again.todo:
            break
        assert {s.attempt for s in again.todo} == {len(seen)}
        asyncio.run(execute_run(again, model_factory=lambda spec: failing))
    assert seen == [3, 3, 0]  # played twice, then given up
    manifest = plan.run_dir.read_manifest()  # each session says where it played
    assert manifest.executor == "local" and manifest.sessions[0]["executor"] == "local"
    last = plan.run_dir.latest_by_key()
    assert all(r.outcome == "infra_error" and r.attempt == 2 and r.gave_up for r in last.values())
    with Index.for_root(results) as index:
        board = summarize(index.episodes_frame(run_ids=[run_id]))
    assert int(board.loc[0, "gave_up"]) == 3 and int(board.loc[0, "infra_error"]) == 3
    # A resume with nothing left to play is still no finished run: 3 stay unscored.
    idle = plan_run(None, [], RunOptions(), results, resume=run_id)
    assert idle.given_up == 3
    summary = asyncio.run(execute_run(idle, model_factory=lambda spec: failing))
    assert (summary.status, summary.exit_code, summary.given_up_before) == ("incomplete", 3, 3)
    assert plan.run_dir.read_manifest().status == "incomplete"

    # Cancelled attempts (Ctrl-C) do not count; a raised --max-attempts plays them again.
    more = plan_run(
        None, [], RunOptions(), results, resume=run_id,
        request=ResumeRequest(options={"max_attempts": 3}),
    )  # fmt: skip
    assert len(more.todo) == 3 and {s.attempt for s in more.todo} == {3}
    assert more.manifest.sessions[-1]["changed"] == {"--max-attempts": 3}


def test_a_resumed_budget_counts_what_judges_spent_too() -> None:
    from gem_eval.judge import JudgeVerdict
    from gem_eval.models.base import Usage
    from gem_eval.records import EpisodeRecord

    record = EpisodeRecord(
        run_id="r", key="k", model="m", task_id="t", sample=0, epoch=0, outcome="completed",
        score=1.0, success=True, turns=1, cost_usd=0.01, started_at=0.0, finished_at=1.0,
    )  # fmt: skip
    assert record.spent_usd == pytest.approx(0.01)
    record.judge = JudgeVerdict(model="j", usage=Usage(cost_usd=0.02))
    assert record.spent_usd == pytest.approx(0.03)
    record.cost_usd = None  # a model without a price: its judge's cost still counts
    assert record.spent_usd == pytest.approx(0.02)
    # Calls replayed from a cut attempt's record were paid for in it: the episode costs
    # them, this record's play did not.
    record.cost_usd, record.replayed_cost_usd = 0.01, 0.004
    assert record.total_cost_usd == pytest.approx(0.03)
    assert record.spent_usd == pytest.approx(0.026)


def test_resume_changes_one_models_server_and_keeps_the_others(suite: Path, tmp_path: Path) -> None:
    results = tmp_path / "r"
    models = [
        ModelSpec(name="openai/a", base_url="http://127.0.0.1:1/v1", backend="openai"),
        ModelSpec(name="openai/b", base_url="http://127.0.0.1:2/v1", backend="openai"),
    ]
    plan = plan_run(str(suite), models, RunOptions(), results)
    RunDir.create(results, plan.manifest)
    moved = ResumeRequest(
        per_model={"openai/b": {"base_url": "http://127.0.0.1:3/v1"}}, models=["openai/b"]
    )
    resumed = plan_run(None, [], RunOptions(), results, resume="latest", request=moved)
    urls = {m.name: m.base_url for m in resumed.manifest.models}
    assert urls == {"openai/a": "http://127.0.0.1:1/v1", "openai/b": "http://127.0.0.1:3/v1"}
    assert resumed.manifest.sessions[-1]["changed"] == {
        "--model-base-url (openai/b)": "http://127.0.0.1:3/v1"
    }
    one_args = ResumeRequest(per_model={"openai/b": {"args": {"temperature": 1.0}}})
    with pytest.raises(UserError, match=r"-M \(openai/b\) would change it"):
        plan_run(None, [], RunOptions(), results, resume="latest", request=one_args)
    with pytest.raises(UserError, match="'openai/c' is not one of them"):
        plan_run(
            None, [], RunOptions(), results, resume="latest",
            request=ResumeRequest(per_model={"openai/c": {"base_url": "http://x/v1"}}),
        )  # fmt: skip


def test_a_finished_run_resumed_needs_no_model_and_stays_finished(
    suite: Path, tmp_path: Path
) -> None:
    from gem_eval.runner.session import settle_idle

    results = tmp_path / "r"
    _, run_dir = play(suite, results, lambda spec: ScriptedModel(["50"] * 20), ["scripted"])
    assert run_dir.read_manifest().status == "finished"
    checked: list[str] = []

    def preflight(models: Any, tasks: Any, options: Any) -> None:
        checked.append("called")
        raise UserError("cannot reach the server")

    gone = ResumeRequest(connection={"base_url": "http://127.0.0.1:1/v1"})
    plan = plan_run(
        None, [], RunOptions(), results, resume="latest", request=gone, preflight=preflight
    )
    assert plan.todo == [] and checked == []
    idle = settle_idle(plan)
    assert idle.exit_code == EXIT_OK and idle.status == "finished"
    manifest = run_dir.read_manifest()
    assert manifest.status == "finished" and len(manifest.sessions) == 0


def test_a_resume_whose_setup_fails_leaves_the_run_as_it_was(suite: Path, tmp_path: Path) -> None:
    from gem_eval.errors import ModelConfigError

    results = tmp_path / "r"
    spec = ModelSpec(name="openai/x", base_url="http://127.0.0.1:1/v1", backend="openai")
    plan = plan_run(str(suite), [spec], RunOptions(), results)
    run_dir = RunDir.create(results, plan.manifest)  # started; nothing recorded yet
    before = run_dir.manifest_path.read_bytes()
    moved = ResumeRequest(connection={"base_url": "http://127.0.0.1:2/v1"})
    again = plan_run(None, [], RunOptions(), results, resume="latest", request=moved)
    assert len(again.todo) == 3
    with pytest.raises(ModelConfigError, match="cannot reach"):
        asyncio.run(execute_run(again))
    assert run_dir.manifest_path.read_bytes() == before  # not marked failed


WRONG_GUESSES = """
name: wrong-guesses
defaults: {samples: 2, limits: {max_turns: 10}, seed: 0}
tasks:
  - env: game:GuessTheNumber-v0
    args: {min_number: 1, max_number: 1000, max_turns: 5}
"""


def test_resume_goes_on_from_the_calls_an_episode_cut_mid_way_paid_for(tmp_path: Path) -> None:
    """An episode cut after two calls (the server went down) is played on from its record:
    its two calls replayed, the three after them made. A forced change of what is
    measured replays nothing: the replies answered other settings."""
    from gem_eval.errors import ModelCallError

    suite = tmp_path / "guesses.yaml"
    suite.write_text(WRONG_GUESSES)
    results = tmp_path / "r"

    def down_after_two(messages: list[Message]) -> Any:
        if sum(m["role"] == "assistant" for m in messages) >= 2:
            return ModelCallError("503 down", status=503, transient=True)
        return ModelOutput(text="\\boxed{1001}", usage=Usage(cost_usd=0.1))

    flaky = ScriptedModel(down_after_two)
    _, run_dir = play(suite, results, lambda spec: flaky, ["scripted"])
    cut = run_dir.latest_by_key()
    assert [(r.outcome, r.turns) for r in cut.values()] == [("infra_error", 2)] * 2

    run_id = run_dir.run_id
    again = plan_run(None, [], RunOptions(), results, resume=run_id)
    assert all(s.paid_replies is not None and len(s.paid_replies.calls) == 2 for s in again.todo)
    model = ScriptedModel([ModelOutput(text="\\boxed{1001}", usage=Usage(cost_usd=0.1))])
    summary = asyncio.run(execute_run(again, model_factory=lambda spec: model))
    assert summary.status == "finished" and len(model.calls) == 2 * 3
    assert summary.cost_usd == pytest.approx(0.1 * (2 * 2 + 2 * 3))  # each call once
    done = run_dir.latest_by_key()
    assert [(r.outcome, r.turns, r.replayed_calls) for r in done.values()] == [
        ("completed", 5, 2)
    ] * 2
    assert all(r.cost_usd == pytest.approx(0.5) for r in done.values())  # the whole episode

    forced = tmp_path / "forced"
    _, run_dir = play(suite, forced, lambda spec: flaky, ["scripted"])
    more_turns = ResumeRequest(options={"overrides": {"limits": {"max_turns": 9}}}, force=True)
    again = plan_run(None, [], RunOptions(), forced, resume=run_dir.run_id, request=more_turns)
    assert len(again.todo) == 2 and all(s.paid_replies is None for s in again.todo)
