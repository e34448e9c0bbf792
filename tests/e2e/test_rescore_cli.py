"""``gem-eval rescore`` end to end: a run recorded by the CLI against the fake model
server, its gold answers fixed, then graded again by the CLI without a model call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply, ToolCallSpec

SUITE = """
name: rescore-cli
defaults: {seed: 0, limits: {max_turns: 4}}
tasks:
  - id: math
    env: math:Math-v0
    dataset: {path: questions.jsonl, fields: {question: question, answer: answer}}
  - id: math-python
    env: math:Math-v0
    dataset: {path: questions.jsonl, fields: {question: question, answer: answer}}
    tools: [python]
    sandbox: {type: local}
"""


def write_questions(folder: Path, second_answer: str) -> None:
    rows = [
        {"question": "What is 17 times 23?", "answer": "391"},
        {"question": "What is 2 plus 2?", "answer": second_answer},
    ]
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def answer(body: dict[str, Any]) -> Reply:
    """With tools, run 17*23 in Python first; answer 391 to everything."""
    messages = body["messages"]
    if body.get("tools") and messages[-1]["role"] == "user":
        return Reply(tool_calls=[ToolCallSpec("python", {"code": "print(17 * 23)"})])
    return Reply("\\boxed{391}")


def test_rescore_grades_a_recorded_run_again_without_model_calls(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    write_questions(tmp_path, "4")
    (tmp_path / "suite.yaml").write_text(SUITE)
    openai_server.handler = answer
    results = tmp_path / "results"
    run = gem_eval(
        "run",
        "--suite",
        str(tmp_path / "suite.yaml"),
        "--model",
        "openai/fake",
        "--model-base-url",
        openai_server.base_url,
        "--model-backend",
        "openai",
        "-q",
        results=results,
    )
    assert run.returncode == 0, run.stderr + run.stdout
    [original] = run_dirs(results)
    calls = openai_server.stats()["requests"]
    before = (original / "episodes.jsonl").read_bytes()

    write_questions(tmp_path, "391")  # the second question's gold answer was wrong
    result = gem_eval("rescore", "latest", results=results)
    assert result.returncode == 0, result.stderr + result.stdout
    assert openai_server.stats()["requests"] == calls
    assert (original / "episodes.jsonl").read_bytes() == before
    [new] = [d for d in run_dirs(results) if d != original]
    assert f"re-scored {original.name} into {new.name}" in result.stdout
    assert "4 episodes graded again, 2 scores changed" in result.stdout
    assert "[gem-eval] 4/4 episodes re-scored" in result.stderr  # the progress line
    old_scores = {str(r["key"]): r["score"] for r in records(original)}
    new_scores = {str(r["key"]): r["score"] for r in records(new)}
    assert old_scores == {k: 1.0 if "|0|" in k else 0.0 for k in old_scores}
    assert new_scores == dict.fromkeys(old_scores, 1.0)
    # The tool-using episode ran its Python call again in a fresh sandbox.
    replayed: Any = next(r for r in records(new) if r["key"] == "openai/fake|math-python|1|0")
    [event] = replayed["trajectory"]["steps"][0]["tool_events"]
    assert event["output"].strip() == "391" and not event["is_error"]
    lines = result.stdout.splitlines()
    row = next(line for line in lines if "openai/fake" in line and "0.500" in line)
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == [
        "openai/fake",
        "0.500",
        "1.000",
    ]

    shown = gem_eval("results", "show", new.name, results=results)
    assert f"rescored  from {original.name} (its scorers; first by gem-eval" in shown.stdout

    unjudged = gem_eval("rescore", "latest", "--scorer", "judge", results=results)
    assert unjudged.returncode == 2
    assert unjudged.stderr == "error: task 'math' has no judge to score it: give --judge MODEL\n"

    # A judge grades the replayed answers: it is called, the judged model is not.
    openai_server.handler = lambda body: (
        Reply("Close enough.\nGRADE: P") if body["model"] == "judge" else answer(body)
    )
    judge = ["--judge", "openai/judge", "--judge-base-url", openai_server.base_url]
    args = ["rescore", original.name, "--scorer", "judge", *judge, "--judge-backend", "openai"]
    judged = gem_eval(*args, results=results)
    assert judged.returncode == 0, judged.stderr + judged.stdout
    models = [r.body["model"] for r in openai_server.requests]
    assert len(models) == calls + 4 and set(models[calls:]) == {"judge"}
    [third] = [d for d in run_dirs(results) if d not in (original, new)]
    assert {(r["score"], r["judge"]["grade"]) for r in records(third)} == {(0.5, "P")}  # type: ignore[index]
    origin = json.loads((third / "manifest.json").read_text())["extra"]["rescored_from"]
    assert (origin["scorer"], origin["judge"]) == ("judge", "openai/judge")


def test_rescore_of_an_unknown_run_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    result = gem_eval("rescore", "nope", results=tmp_path / "results")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: no run 'nope': there are no runs in {tmp_path / 'results'}"
    ]


def test_an_unknown_scorer_is_one_line_and_help_lists_the_scorers(tmp_path: Path) -> None:
    from typing import get_args

    from gem_eval.cli.rescore import SCORERS
    from gem_eval.records import Scorer

    assert get_args(Scorer) == SCORERS
    (tmp_path / "results").mkdir()
    result = gem_eval("rescore", "latest", "--scorer", "retrun", results=tmp_path / "results")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: unknown scorer 'retrun': choose success, return, discounted_return or judge"
    ]
    shown = gem_eval("rescore", "--help", results=tmp_path / "results")
    assert "--scorer [success|return|discounted_return|judge]" in shown.stdout
