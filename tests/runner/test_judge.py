"""The model judge: rubric, grade parsing, verdicts, and judged episodes in the executor
(the fixture server plays both the judged model and the judge, told apart by name)."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gem_eval.budget import Budget
from gem_eval.errors import ModelCallError
from gem_eval.judge import NO_ANSWER, JudgeSpec, judge_answer
from gem_eval.models import ModelOutput, ScriptedModel, Usage
from gem_eval.models.response_cache import ResponseCache
from gem_eval.outcomes import OUTCOMES
from gem_eval.records import EpisodeRecord, EpisodeSpec, ModelSpec, TaskSpec
from gem_eval.runner import LocalExecutor
from gem_eval.runner.judging import Judges, judge_record
from gem_eval.runner.scoring import to_record
from gem_eval.runner.session import default_model_factory
from gem_eval.suites import load_suite
from gem_eval.suites.schema import SuiteError
from gem_eval.trajectory import Step, Trajectory
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply

QUESTION = "Who designed the Verran Lighthouse?"
GOLD = "Odile Marchetti"


# -- the rubric and the grade ---------------------------------------------------------


def test_rubric_fills_placeholders_once_and_leaves_other_braces() -> None:
    spec = JudgeSpec(model="j", rubric='Q={question} A={answer} T={target} C={criterion} {"k": 1}')
    # An answer that holds a placeholder stays text; criterion falls back to the target.
    text = spec.render("q?", "it is {target}", "gold")
    assert text == 'Q=q? A=it is {target} T=gold C=gold {"k": 1}'
    assert JudgeSpec(model="j", criterion="names her").render("q", "a", "gold").count("names her")


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("Reasoning...\nGRADE: C", "C"),
        ("grade: p", "P"),
        ("**GRADE:** I", "I"),
        ("I would write GRADE: C, but no.\nGRADE: I", "I"),  # the last grade counts
        ("GRADE: X", None),  # not a grade of the mapping
        ("The answer is correct.", None),
    ],
)
def test_grade_is_parsed_case_insensitively_last_one_counting(
    reply: str, grade: str | None
) -> None:
    assert JudgeSpec(model="j").parse(reply) == grade


def test_custom_grades_and_pattern() -> None:
    spec = JudgeSpec(
        model="j", grades={"1": 0.0, "5": 1.0}, grade_pattern=r"Score:\s*(\d)", instructions="x"
    )
    assert spec.parse("Score: 5") == "5" and spec.full_score == 1.0
    assert spec.parse("Score: 3") is None


@pytest.mark.parametrize(
    "bad",
    [
        {"rubric": "no answer shown: {question}"},
        {"grade_pattern": "GRADE: [CPI]"},  # no group
        {"grade_pattern": "GRADE: ("},
        {"grades": {}},
        {"max_attempts": 0},
    ],
)
def test_bad_judge_specs_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        JudgeSpec(model="j", **bad)


# -- verdicts ---------------------------------------------------------------------------


def _output(text: str, tokens: int = 10) -> ModelOutput:
    return ModelOutput(text=text, usage=Usage(input_tokens=tokens, output_tokens=2, cost_usd=0.01))


def _verdict(model: ScriptedModel, answer: str = "Marchetti", **spec: Any) -> Any:
    return asyncio.run(
        judge_answer(model, JudgeSpec(model="j", **spec), question="q", answer=answer, target="t")
    )


def test_partial_credit_and_usage() -> None:
    verdict = _verdict(ScriptedModel([_output("close enough\nGRADE: P")]))
    assert (verdict.grade, verdict.score, verdict.error) == ("P", 0.5, None)
    assert verdict.explanation == "close enough\nGRADE: P" and verdict.attempts == 1
    assert verdict.usage.input_tokens == 10 and verdict.usage.cost_usd == pytest.approx(0.01)


def test_a_reply_without_grade_is_asked_again() -> None:
    judge = ScriptedModel([_output("It looks right."), _output("GRADE: C", tokens=20)])
    verdict = _verdict(judge)
    assert (verdict.grade, verdict.score, verdict.attempts) == ("C", 1.0, 2)
    assert verdict.usage.input_tokens == 30  # both calls counted
    follow_up = judge.calls[1]
    assert follow_up[1] == {"role": "assistant", "content": "It looks right."}
    assert "GRADE: X" in follow_up[2]["content"]


def test_no_grade_after_max_attempts_is_an_error_not_a_zero() -> None:
    judge = ScriptedModel([_output("hmm")])
    verdict = _verdict(judge, max_attempts=3)
    assert verdict.score is None and verdict.grade is None and verdict.attempts == 3
    assert verdict.error is not None and "no grade" in verdict.error
    assert len(judge.calls) == 3


def test_a_failed_judge_call_is_an_error() -> None:
    failure = ModelCallError("HTTP 500: boom", status=500, transient=True, retries=2)
    verdict = _verdict(ScriptedModel([failure]))
    assert verdict.score is None and verdict.retries == 2
    assert verdict.error == "ModelCallError: HTTP 500: boom"


def test_an_empty_answer_gets_the_worst_grade_without_a_call() -> None:
    judge = ScriptedModel([_output("GRADE: C")])
    verdict = _verdict(judge, answer="  ")
    assert verdict.score == 0.0 and verdict.explanation == NO_ANSWER and not judge.calls


def test_judge_error_is_not_scored_and_replayed() -> None:
    info = OUTCOMES["judge_error"]
    assert not info.scored and info.replay and info.capped and info.exit_class == "incomplete"


# -- judged episodes through the executor, over HTTP ----------------------------------


def _judge_spec(server: FakeOpenAIServer, **extra: Any) -> JudgeSpec:
    return JudgeSpec(
        model="openai/judge", base_url=server.base_url, backend="openai", max_retries=0, **extra
    )


def _qa_spec(server: FakeOpenAIServer, judge: JudgeSpec | None) -> EpisodeSpec:
    task = TaskSpec(
        id="lighthouse",
        env_id="qa:QA-v0",
        env_kwargs={"question": QUESTION, "answer": [GOLD, "Marchetti"]},
        scorer="judge",
        judge=judge,
    )
    model = ModelSpec(name="openai/fake", base_url=server.base_url, backend="openai")
    return EpisodeSpec(
        key=EpisodeSpec.make_key(model.name, task.id, 0, 0),
        task=task,
        model=model,
        sample=0,
        epoch=0,
        seed=0,
    )


def _both(judge_reply: Reply | Fault) -> Any:
    """A handler: the judged model answers in prose (no <answer> tags: the QA env finds
    no answer and fails it), the judge as given."""

    def handler(body: dict[str, Any]) -> Reply | Fault:
        if body["model"] == "judge":
            return judge_reply
        usage = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
        return Reply("The lighthouse was designed by Odile Marchetti.", usage=usage)

    return handler


def _play(spec: EpisodeSpec, cache: ResponseCache | None = None) -> EpisodeRecord:
    async def go() -> EpisodeRecord:
        factory = functools.partial(default_model_factory, concurrency=4)
        executor = LocalExecutor(factory, cache=cache)
        executor.check([spec.task])
        await executor.start([spec.model])
        try:
            return await executor.run("run", spec)
        finally:
            await executor.aclose()

    return asyncio.run(go())


def test_an_episode_is_scored_by_its_judge(openai_server: FakeOpenAIServer) -> None:
    usage = {"prompt_tokens": 101, "completion_tokens": 7, "total_tokens": 108}
    openai_server.handler = _both(Reply("She did.\nGRADE: C", usage=usage))
    judge = _judge_spec(openai_server, generation={"max_tokens": 64})
    record = _play(_qa_spec(openai_server, judge))
    assert record.outcome == "completed" and record.score == 1.0 and record.success
    assert record.trajectory is not None and not record.trajectory.success  # the env's own
    verdict = record.judge
    assert verdict is not None and (verdict.grade, verdict.model) == ("C", "openai/judge")
    assert verdict.explanation == "She did.\nGRADE: C" and verdict.target == f"{GOLD} / Marchetti"
    # The judge's tokens are its own; the model's are the model's alone.
    assert (verdict.usage.input_tokens, verdict.usage.output_tokens) == (101, 7)
    assert (record.input_tokens, record.output_tokens) == (11, 3)
    [judge_request] = [r.body for r in openai_server.requests if r.body["model"] == "judge"]
    prompt = judge_request["messages"][0]["content"]
    assert QUESTION in prompt and "designed by Odile Marchetti." in prompt and GOLD in prompt
    assert (judge_request["temperature"], judge_request["max_tokens"]) == (0.0, 64)  # over t=0
    # The record round-trips with its verdict (episodes.jsonl).
    again = EpisodeRecord.model_validate_json(record.model_dump_json())
    assert again.judge == verdict


def test_a_failing_judge_is_judge_error_never_a_zero(openai_server: FakeOpenAIServer) -> None:
    openai_server.handler = _both(Fault.status(500))
    record = _play(_qa_spec(openai_server, _judge_spec(openai_server)))
    assert record.outcome == "judge_error" and record.score is None and not record.scored
    assert not record.success and record.input_tokens == 11  # the model's work is kept
    assert record.judge is not None and record.judge.error is not None
    assert "500" in record.judge.error
    assert record.trajectory is not None and record.trajectory.outcome == "completed"


def test_judge_calls_go_through_the_response_cache(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = _both(Reply("GRADE: P"))
    spec = _qa_spec(openai_server, _judge_spec(openai_server))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    try:
        first = _play(spec, cache)
        calls = len(openai_server.requests)
        second = _play(spec, cache)
    finally:
        cache.close()
    assert calls == 2 and len(openai_server.requests) == calls  # no call the second time
    assert first.judge is not None and not first.judge.cached
    assert second.judge is not None and second.judge.cached
    assert (second.score, second.judge.grade) == (first.score, "P")


def test_judge_record_rejudges_a_judge_error(openai_server: FakeOpenAIServer) -> None:
    openai_server.handler = _both(Reply("no verdict here"))
    spec = _qa_spec(openai_server, _judge_spec(openai_server, max_attempts=2))
    failed = _play(spec)
    assert failed.outcome == "judge_error" and failed.judge and failed.judge.attempts == 2
    judge = ScriptedModel(["GRADE: P"], name="openai/judge")
    judged = asyncio.run(judge_record(failed, spec.task, judge))
    assert (judged.outcome, judged.score, judged.success) == ("completed", 0.5, False)
    assert judged.judge is not None and judged.judge.target == f"{GOLD} / Marchetti"
    assert GOLD in judge.calls[0][0]["content"]  # the earlier verdict's target is reused


def test_judges_are_built_once_per_connection() -> None:
    built: list[str] = []

    def factory(spec: ModelSpec) -> ScriptedModel:
        built.append(spec.name)
        return ScriptedModel(["GRADE: C"], name=spec.name)

    def task(n: int, rubric: str) -> TaskSpec:
        judge = JudgeSpec(model="j", rubric=rubric)
        return TaskSpec(id=f"t{n}", env_id="qa:QA-v0", scorer="judge", judge=judge)

    judges = Judges(factory)
    asyncio.run(
        judges.start([task(1, "{answer}"), task(2, "A: {answer}"), TaskSpec(id="x", env_id="e")])
    )
    assert built == ["j"]
    with pytest.raises(Exception, match="needs a `judge:`"):
        asyncio.run(Judges(factory).start([TaskSpec(id="t", env_id="e", scorer="judge")]))


# -- suites ----------------------------------------------------------------------------


def test_a_suite_without_its_judge_is_one_line_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "tasks:\n  - env: qa:QA-v0\n    args: {question: q, answer: Paris}\n    scorer: judge\n"
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(f"{path}:4: tasks[0].scorer: scorer: judge needs")


def test_a_suite_judge_reaches_the_task(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "defaults:\n  scorer: judge\n  judge: {model: openai/j, grades: {C: 1, I: 0}}\n"
        "tasks:\n  - env: qa:QA-v0\n    args: {question: q, answer: Paris}\n"
        "  - env: qa:QA-v0\n    id: own\n    args: {question: q, answer: Paris}\n"
        "    judge: {model: openai/k, criterion: says a}\n"
    )
    first, own = load_suite(path).task_specs()
    assert first.judge is not None and first.judge.grades == {"C": 1.0, "I": 0.0}
    assert own.judge is not None and (own.judge.model, own.judge.criterion) == (
        "openai/k",
        "says a",
    )
    assert own.judge.grades == {"C": 1.0, "P": 0.5, "I": 0.0}  # a task's judge replaces
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "tasks:\n  - env: qa:QA-v0\n    args: {question: q, answer: Paris}\n"
        "    judge: {model: j, rubrik: x}\n"
    )
    with pytest.raises(SuiteError, match=r"rubrik: unknown key\. Did you mean: rubric"):
        load_suite(bad)


def test_the_judge_is_held_to_the_run_budget() -> None:
    judge = ScriptedModel([_output("GRADE: C")], name="j")  # each call costs $0.01
    task = TaskSpec(id="t", env_id="qa:QA-v0", scorer="judge", judge=JudgeSpec(model="j"))
    spec = EpisodeSpec(key="k", task=task, model=ModelSpec(name="m"), sample=0, epoch=0, seed=0)
    trajectory = Trajectory(env_id="qa:QA-v0", model="m", initial_observation="q?")
    trajectory.steps.append(Step(index=0, output=ModelOutput(text="x"), action="Paris"))
    record = to_record("run", spec, trajectory, 0.0)
    budget = Budget(cap=0.015)

    async def go() -> list[EpisodeRecord]:
        judges = Judges(lambda _: judge)
        await judges.start([task])
        return [await judges.judge(spec, record, "Paris", budget=budget) for _ in range(3)]

    first, second, third = asyncio.run(go())
    # Charged per call; the second starts under the cap and overshoots it, as a model's.
    assert first.score == second.score == 1.0 and budget.spent == pytest.approx(0.02)
    assert third.outcome == "judge_error" and third.score is None
    assert third.judge is not None and "--max-cost" in (third.judge.error or "")
    assert len(judge.calls) == 2  # no call once the budget is spent


def test_a_ray_node_worker_judges_its_episodes(openai_server: FakeOpenAIServer) -> None:
    from gem_eval.runner.node_worker import NodeWorker  # what each Ray node runs

    openai_server.handler = _both(Reply("GRADE: C"))
    spec = _qa_spec(openai_server, _judge_spec(openai_server))

    async def go() -> EpisodeRecord:
        worker = NodeWorker(functools.partial(default_model_factory, concurrency=2), {})
        await worker.check([spec.task])
        await worker.start([spec.model])
        try:
            record, _ = await worker.run("run", spec)
            return record
        finally:
            await worker.aclose()

    record = asyncio.run(go())
    assert record.score == 1.0 and record.judge is not None and record.judge.grade == "C"


def test_an_unreachable_judge_stops_the_run_unless_the_cache_serves_it(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    from gem_eval.errors import ModelConfigError

    openai_server.handler = _both(Reply("GRADE: C"))
    spec = _qa_spec(openai_server, _judge_spec(openai_server))
    gone = "http://127.0.0.1:9/v1"  # nothing listens there
    dead = spec.model_copy(
        update={
            "model": spec.model.model_copy(update={"base_url": gone, "max_retries": 0}),
            "task": spec.task.model_copy(
                update={"judge": _judge_spec(openai_server).model_copy(update={"base_url": gone})}
            ),
        }
    )
    with pytest.raises(ModelConfigError, match="openai/judge"):
        _play(dead.model_copy(update={"model": spec.model}))  # only the judge is gone
    cache = ResponseCache(tmp_path / "responses.sqlite")
    try:
        first = _play(spec, cache)
        replayed = _play(dead, cache)  # both servers gone: every reply from the cache
    finally:
        cache.close()
    assert replayed.judge is not None and replayed.judge.cached
    assert (replayed.outcome, replayed.score) == (first.outcome, first.score) == ("completed", 1.0)
