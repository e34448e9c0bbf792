"""Re-scoring a recorded run: a run of a small suite is played against the fake OpenAI
server, the grader changes, and ``rescore_run`` grades the recorded episodes again into a
new run without a single model call."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from gem_eval.envs.math.env import MathEnv
from gem_eval.envs.question import Grade
from gem_eval.errors import UserError
from gem_eval.models.base import ModelOutput
from gem_eval.records import EpisodeRecord, ModelSpec, RunManifest, TaskSpec
from gem_eval.runner.rescore import RescoreSummary, hosted_line, rescore_run
from gem_eval.runner.session import RunOptions, execute_run, plan_run
from gem_eval.store import Index, RunDir
from gem_eval.trajectory import Step, Trajectory
from tests.fixtures.openai_server import FakeOpenAIServer, Reply

QUESTIONS = [
    {"question": "What is 17 times 23?", "answer": "391"},
    {"question": "What is 2 plus 2?", "answer": "4"},
    {"question": "What is 3 times 3?", "answer": "9"},
]

SUITE = """
name: rescore-test
defaults: {seed: 0, limits: {max_turns: 4}}
tasks:
  - id: math
    env: math:Math-v0
    dataset: {path: questions.jsonl, fields: {question: question, answer: answer}}
  - id: math-retry
    env: math:Math-v0
    args: {max_turns: 2}
    dataset: {path: questions.jsonl, fields: {question: question, answer: answer}}
    samples: 1
  - id: guess
    env: game:GuessTheNumber-v0-easy
    args: {max_turns: 2}
    samples: 2
"""


def answer(body: dict[str, Any]) -> Reply:
    """The fake model: 391 to every question (right once); in the game (seeds 0 and 1
    hide 7 and 2), 5 then 6: progress, never solved in two turns."""
    messages = body["messages"]
    if "times" in messages[0]["content"] or "plus" in messages[0]["content"]:
        return Reply("\\boxed{391}")
    return Reply("\\boxed{5}" if len(messages) < 3 else "\\boxed{6}")


@pytest.fixture
def recorded(openai_server: FakeOpenAIServer, tmp_path: Path) -> tuple[Path, str]:
    """A finished run of the suite in ``tmp_path/results``: its results dir and id."""
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (tmp_path / "suite.yaml").write_text(SUITE)
    openai_server.handler = answer
    model = ModelSpec(name="openai/fake", base_url=openai_server.base_url, backend="openai")
    results = tmp_path / "results"
    plan = plan_run(str(tmp_path / "suite.yaml"), [model], RunOptions(), results)
    summary = asyncio.run(execute_run(plan))
    assert summary.status == "finished"
    return results, plan.manifest.run_id


def scores(results: Path, run_id: str) -> dict[str, float | None]:
    return {k: r.score for k, r in RunDir(results / run_id).latest_by_key().items()}


def files(results: Path, run_id: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (results / run_id).iterdir() if p.is_file()}


def lenient(self: MathEnv, extracted: str) -> Grade:
    """A new grader that takes any integer answer."""
    ok = extracted.strip().isdigit()
    return Grade(ok, float(ok), {"grader": "lenient"})


def test_a_new_grader_changes_the_scores_without_calling_the_model(
    recorded: tuple[Path, str], openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, old_id = recorded
    before, calls = files(results, old_id), openai_server.stats()["requests"]
    old = scores(results, old_id)
    assert old["openai/fake|math|0|0"] == 1.0 and old["openai/fake|math|1|0"] == 0.0
    monkeypatch.setattr(MathEnv, "grade", lenient)
    summary = asyncio.run(rescore_run(results, "latest"))

    assert openai_server.stats()["requests"] == calls  # not one model call
    assert files(results, old_id) == before  # the original run is untouched
    new = scores(results, summary.run_id)
    assert new.keys() == old.keys()
    assert new["openai/fake|math|1|0"] == new["openai/fake|math|2|0"] == 1.0
    assert new["openai/fake|math-retry|0|0"] == 1.0
    assert {k: v for k, v in new.items() if "guess" in k} == {
        k: v for k, v in old.items() if "guess" in k
    }
    assert (summary.regraded, summary.changed, summary.diverged) == (6, 2, {})
    assert summary.old_means["openai/fake"] == pytest.approx(2 / 6)
    assert summary.new_means["openai/fake"] == pytest.approx(4 / 6)

    manifest, source = RunDir(results / summary.run_id).read_manifest(), _manifest(results, old_id)
    assert manifest.extra["rescored_from"]["run_id"] == old_id
    # its episodes were played when the original's were: leaderboards date it so
    assert manifest.extra["rescored_from"]["played_at"] == source.started_at
    assert manifest.status == "finished" and manifest.suite_hash == source.suite_hash
    assert [m.name for m in manifest.models] == ["openai/fake"]
    record = RunDir(results / summary.run_id).latest_by_key()["openai/fake|math|1|0"]
    assert record.trajectory is not None
    assert record.trajectory.steps[-1].info["grader"] == "lenient"
    with Index.for_root(results) as index:  # leaderboards see both runs
        assert {r["run_id"] for r in index.runs()} == {old_id, summary.run_id}
        # Both are indexed; which one a leaderboard shows is gem_eval.metrics.selection's.
        both = index.episodes_frame(run_ids=[old_id, summary.run_id])
        assert set(both["run_id"]) == {old_id, summary.run_id}
        assert set(index.episodes_frame()["run_id"]) == {old_id, summary.run_id}


def test_a_replay_that_leaves_the_record_keeps_its_old_score(
    recorded: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results, old_id = recorded
    # A stricter grader: 391 is now wrong, so math-retry's env offers a second try that
    # the record does not hold: the replay diverges and the recorded grade stays.
    monkeypatch.setattr(MathEnv, "grade", lambda self, extracted: Grade(False, 0.0))
    summary = asyncio.run(rescore_run(results, old_id))
    new = scores(results, summary.run_id)
    assert list(summary.diverged) == ["openai/fake|math-retry|0|0"]
    assert "more turns" in summary.diverged["openai/fake|math-retry|0|0"]
    assert new["openai/fake|math-retry|0|0"] == 1.0
    assert new["openai/fake|math|0|0"] == 0.0  # one answer, one grade: re-graded
    origin = RunDir(results / summary.run_id).read_manifest().extra["rescored_from"]
    assert origin["diverged"] == summary.diverged


def test_a_changed_task_is_a_divergence(recorded: tuple[Path, str], tmp_path: Path) -> None:
    results, old_id = recorded
    edited = [{**QUESTIONS[0], "question": "What is 23 times 17?"}, *QUESTIONS[1:]]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in edited))
    summary = asyncio.run(rescore_run(results, old_id))
    assert set(summary.diverged) == {"openai/fake|math|0|0", "openai/fake|math-retry|0|0"}
    assert all("first observation" in why for why in summary.diverged.values())


def test_a_fixed_gold_answer_is_graded_again(recorded: tuple[Path, str], tmp_path: Path) -> None:
    results, old_id = recorded
    fixed = [QUESTIONS[0], {**QUESTIONS[1], "answer": "391"}, QUESTIONS[2]]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in fixed))
    summary = asyncio.run(rescore_run(results, old_id))
    assert scores(results, summary.run_id)["openai/fake|math|1|0"] == 1.0
    assert summary.changed == 1 and not summary.diverged


def test_the_return_scorer_differs_from_success_on_a_dense_game(
    recorded: tuple[Path, str],
) -> None:
    results, old_id = recorded
    by_success = asyncio.run(rescore_run(results, old_id, scorer="success"))
    by_return = asyncio.run(rescore_run(results, old_id, scorer="return"))
    success = scores(results, by_success.run_id)
    returns = scores(results, by_return.run_id)
    for key in ("openai/fake|guess|0|0", "openai/fake|guess|1|0"):
        record = RunDir(results / by_return.run_id).latest_by_key()[key]
        assert record.trajectory is not None and len(record.trajectory.steps) == 2
        assert success[key] == 0.0  # never solved
        assert returns[key] == pytest.approx(record.trajectory.total_return)
        assert returns[key] != 0.0  # but the guesses made progress
    manifest = RunDir(results / by_return.run_id).read_manifest()
    assert {t.scorer for t in manifest.tasks} == {"return"}
    assert manifest.extra["rescored_from"]["scorer"] == "return"
    assert by_success.changed == 0


def test_unscored_episodes_are_copied_as_still_to_play(recorded: tuple[Path, str]) -> None:
    results, old_id = recorded
    source = RunDir(results / old_id)
    last = source.latest_by_key()["openai/fake|math|2|0"]
    assert last.trajectory is not None
    lost = last.trajectory.model_copy(update={"outcome": "infra_error"})
    failed = last.model_copy(update={"outcome": "infra_error", "score": None, "trajectory": lost})
    failed.attach({"notes.txt": "what the tools made"})
    source.append(failed)
    # An episode whose judge failed was played: it is graded again, not copied.
    unjudged = source.latest_by_key()["openai/fake|math|1|0"]
    source.append(unjudged.model_copy(update={"outcome": "judge_error", "score": None}))
    summary = asyncio.run(rescore_run(results, old_id))
    assert summary.not_scored == 1 and summary.regraded == 5
    assert scores(results, summary.run_id)["openai/fake|math|1|0"] == 0.0
    new = RunDir(results / summary.run_id)
    copied = new.latest_by_key()["openai/fake|math|2|0"]
    assert copied.outcome == "infra_error" and copied.score is None
    [attachment] = copied.attachments  # its files come along
    assert (new.path / attachment).read_text() == "what the tools made"
    assert new.read_manifest().status == "incomplete"  # --resume plays it


def test_a_run_of_hosted_tasks_only_cannot_be_rescored(tmp_path: Path) -> None:
    task = TaskSpec(id="tb/hello", env_id="terminal:Task-v0", env_kwargs={"path": "x"})
    manifest = RunManifest(
        run_id="hosted-run",
        suite="terminal-bench",
        suite_hash="h",
        models=[ModelSpec(name="m")],
        tasks=[task],
        episodes_planned=1,
        gem_eval_version="0",
        host="h",
        started_at=0.0,
        status="finished",
    )
    run = RunDir.create(tmp_path, manifest)
    trajectory = Trajectory(
        env_id=task.env_id, model="m", steps=[Step(index=0, output=ModelOutput())]
    )
    run.append(
        EpisodeRecord(
            run_id="hosted-run",
            key="m|tb/hello|0|0",
            model="m",
            task_id=task.id,
            sample=0,
            epoch=0,
            outcome="completed",
            score=1.0,
            success=True,
            turns=1,
            started_at=0.0,
            finished_at=1.0,
            trajectory=trajectory,
        )
    )
    with pytest.raises(UserError, match=r"hosted tasks \(terminal\).*final container state"):
        asyncio.run(rescore_run(tmp_path, "hosted-run"))
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["hosted-run"]


def test_an_imported_run_cannot_be_rescored(recorded: tuple[Path, str]) -> None:
    results, old_id = recorded
    run = RunDir(results / old_id)
    manifest = run.read_manifest()
    manifest.extra["imported"] = {"source": "inspect", "path": "log.eval"}
    run.write_manifest(manifest)
    with pytest.raises(UserError, match="imported from inspect: its episodes cannot be"):
        asyncio.run(rescore_run(results, old_id))


def test_the_hosted_line_names_the_families() -> None:
    summary = RescoreSummary("new", "old", None)
    assert hosted_line(summary) is None
    summary.kept_hosted.update({"terminal": 3})
    assert hosted_line(summary) == (
        "3 episodes of terminal tasks keep their score: graded on the final container "
        "state, which is not kept"
    )


def _manifest(results: Path, run_id: str) -> RunManifest:
    return RunDir(results / run_id).read_manifest()


@pytest.mark.docker
def test_a_hosted_task_keeps_its_score_and_is_reported(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "questions.jsonl").write_text(json.dumps(QUESTIONS[0]) + "\n")
    (tmp_path / "suite.yaml").write_text(
        "name: mixed\ndefaults: {seed: 0}\ntasks:\n"
        "  - id: math\n    env: math:Math-v0\n"
        "    dataset: {path: questions.jsonl, fields: {question: question, answer: answer}}\n"
        "  - id: tb\n    env: terminal:Task-v0\n"
        f"    args: {{path: {root / 'tests/fixtures/terminal/tb2-count-words'}}}\n"
        f"    sandbox: {{image_map: {{'python:3*': {root / 'tasks/terminal/base'}}}}}\n"
    )
    results = tmp_path / "results"
    plan = plan_run(str(tmp_path / "suite.yaml"), [ModelSpec(name="oracle")], RunOptions(), results)
    assert asyncio.run(execute_run(plan)).status == "finished"
    old = scores(results, plan.manifest.run_id)
    assert old == {"oracle|math|0|0": 1.0, "oracle|tb|0|0": 1.0}

    summary = asyncio.run(rescore_run(results, plan.manifest.run_id))
    assert (summary.regraded, dict(summary.kept_hosted)) == (1, {"terminal": 1})
    assert hosted_line(summary) == (
        "1 episodes of terminal tasks keep their score: graded on the final container "
        "state, which is not kept"
    )
    new = RunDir(results / summary.run_id).latest_by_key()
    original = RunDir(results / plan.manifest.run_id).latest_by_key()
    kept, before = new["oracle|tb|0|0"], original["oracle|tb|0|0"]
    assert kept.score == 1.0 and kept.trajectory == before.trajectory


def test_an_interrupted_rescoring_keeps_the_recorded_grade_of_the_rest(
    recorded: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results, old_id = recorded

    def slow(self: MathEnv, extracted: str) -> Grade:
        time.sleep(0.2)  # a slow grader, so that Ctrl-C finds a replay in flight
        return Grade(True, 1.0)

    monkeypatch.setattr(MathEnv, "grade", slow)

    async def interrupted() -> RescoreSummary:
        first = asyncio.Event()
        task = asyncio.create_task(
            rescore_run(results, old_id, concurrency=1, progress=lambda done, total: first.set())
        )
        await first.wait()
        task.cancel()  # as Ctrl-C does
        return await task

    summary = asyncio.run(interrupted())
    new = RunDir(results / summary.run_id)
    assert summary.status == new.read_manifest().status == "interrupted"
    assert summary.regraded == 1 and len(summary.failed) == 5
    assert set(summary.failed.values()) == {"not replayed: interrupted"}
    old = scores(results, old_id)
    after = scores(results, summary.run_id)
    assert after.keys() == old.keys()  # every episode is in the new run
    assert {k: after[k] for k in summary.failed} == {k: old[k] for k in summary.failed}
