"""``scorer: judge`` end to end: ``gem-eval run`` of a judged suite against the fake
server, which plays both the judged model and the judge (told apart by model name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply

SUITE = Path(__file__).resolve().parents[1] / "fixtures" / "judge" / "suite.yaml"
JUDGE = "gpt-4o-mini"  # the judge's name as its requests carry it


def judged_suite(server: FakeOpenAIServer, tmp_path: Path) -> Path:
    path = tmp_path / "judged.yaml"
    path.write_text(SUITE.read_text().replace("JUDGE_URL", server.base_url))
    return path


def run_args(server: FakeOpenAIServer, suite: Path) -> list[str]:
    model = ["--model", "openai/fake", "--model-base-url", server.base_url]
    return ["run", "--suite", str(suite), *model, "--model-backend", "openai", "-q"]


def serve(server: FakeOpenAIServer, judge: Reply | Fault) -> None:
    def handler(body: dict[str, Any]) -> Reply | Fault:
        if body["model"] == JUDGE:
            return judge
        return Reply("It was designed by Odile Marchetti.")  # no <answer>: the env fails it

    server.handler = handler


def test_a_judged_suite_scores_by_the_judge_and_resumes_its_failures(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    suite = judged_suite(openai_server, tmp_path)
    results = tmp_path / "results"
    serve(openai_server, Fault.status(500))  # the judge fails: nothing is scored
    failed = gem_eval(*run_args(openai_server, suite), results=results)
    assert failed.returncode == 3, failed.stderr + failed.stdout
    assert "2 judge_error" in failed.stdout + failed.stderr
    assert "judge: 0 episodes graded, 2 failed (judge_error), $0.0000" in failed.stdout
    assert f"judge 'openai/{JUDGE}'" in failed.stdout + failed.stderr  # its first error
    [run] = run_dirs(results)
    first = records(run)
    assert {r["outcome"] for r in first} == {"judge_error"}
    assert all(r["score"] is None and r["input_tokens"] > 0 for r in first)

    serve(openai_server, Reply("It names her.\nGRADE: C"))
    resumed = gem_eval("run", "--resume", "latest", "-q", results=results)
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert "judge: 2 episodes graded, $0.0000 (apart from" not in resumed.stdout  # priced
    assert "judge: 2 episodes graded, $" in resumed.stdout
    latest = {r["key"]: r for r in records(run)}  # the replay supersedes each failure
    assert len(latest) == 2
    for record in latest.values():
        assert (record["outcome"], record["score"], record["success"]) == ("completed", 1.0, True)
        verdict = record["judge"]
        assert verdict["grade"] == "C" and verdict["explanation"] == "It names her.\nGRADE: C"
        # The judge's cost is its own (gpt-4o-mini is priced); the model's is not charged it.
        assert verdict["usage"]["cost_usd"] > 0 and not record["cost_usd"]
        assert record["attempt"] == 2
    prompts = [
        r.body["messages"][0]["content"] for r in openai_server.requests if r.body["model"] == JUDGE
    ]
    assert "names Odile Marchetti as the designer" in prompts[-1]  # the suite's criterion

    # Re-scoring re-judges (a stricter judge now) without calling the judged model.
    serve(openai_server, Reply("It lacks the year.\nGRADE: P"))
    asked = len([r for r in openai_server.requests if r.body["model"] != JUDGE])
    rescored = gem_eval("rescore", "latest", results=results)
    assert rescored.returncode == 0, rescored.stderr + rescored.stdout
    assert len([r for r in openai_server.requests if r.body["model"] != JUDGE]) == asked
    new = next(d for d in run_dirs(results) if d != run)
    again = records(new)
    assert len(again) == 2
    assert all((r["score"], r["judge"]["grade"]) == (0.5, "P") for r in again)  # type: ignore[index]


def test_tasks_check_has_the_judge_grade_the_reference_answer(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        assert body["model"] == JUDGE  # the reference agents call no model
        # The oracle plays the gold answer: the judge accepts it.
        submission = body["messages"][0]["content"].split("[Submission]:")[1].split("***")[0]
        accepted = "Odile Marchetti" in submission
        return Reply("GRADE: C" if accepted else "GRADE: I")

    openai_server.handler = handler
    suite = judged_suite(openai_server, tmp_path)
    result = gem_eval("tasks", "check", str(suite), "-q", results=tmp_path / "results")
    assert result.returncode == 0, result.stderr + result.stdout
    assert "1/1 tasks healthy" in result.stdout
    assert len(openai_server.requests) == 4  # both agents, both samples, judged
