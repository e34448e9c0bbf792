"""``gem-eval run --suite math|qa|code`` end to end: the CLI in a subprocess, driven by
an oracle model behind the fake OpenAI server (it reads the question from the prompt and
answers with the gold answer, using the task's tools the way an agent would), and by a
model that is always wrong. Scores must be 1.0 and 0.0 respectively."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_run_cli import ROOT, gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply, ToolCallSpec


def rows(path: str) -> list[dict[str, Any]]:
    lines = (ROOT / path).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def last_user_text(request: dict[str, Any]) -> str:
    users = [m for m in request["messages"] if m["role"] == "user"]
    return str(users[-1]["content"]) if users else ""


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def oracle(answers: dict[str, str], search_first: bool = False) -> Callable[..., Reply]:
    """Answer the question found in the first user message; with ``search_first`` and
    tools offered, call ``search`` with the question before answering."""

    def handler(request: dict[str, Any]) -> Reply:
        first = next(m for m in request["messages"] if m["role"] == "user")
        question = next((q for q in answers if q in str(first["content"])), None)
        if question is None:
            return Reply("I do not know.")
        if search_first and request.get("tools") and not tool_results(request):
            return Reply(tool_calls=[ToolCallSpec("search", {"query": question})])
        return Reply(answers[question])

    return handler


def run_suite(server: FakeOpenAIServer, suite: str, tmp: Path, *extra: str) -> list[dict[str, Any]]:
    result = gem_eval(
        "run",
        "--suite",
        suite,
        "--model",
        "openai/fake",
        "--model-base-url",
        server.base_url,
        "-q",
        *extra,
        results=tmp,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [run] = run_dirs(tmp)
    return records(run)


def test_qa_suite_oracle_scores_all_and_a_wrong_model_none(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    golds = {
        r["question"]: f"<answer>{r['answers'][0]}</answer>"
        for r in rows("tasks/qa/questions.jsonl")
    }
    openai_server.handler = oracle(golds, search_first=True)
    recs = run_suite(openai_server, "qa", tmp_path / "oracle", "--limit", "5")
    assert len(recs) == 10 and all(r["outcome"] == "completed" for r in recs)
    assert [r["score"] for r in recs] == [1.0] * 10
    searched = [r for r in recs if r["task_id"] == "qa-search"]
    events = [e for r in searched for s in r["trajectory"]["steps"] for e in s["tool_events"]]
    assert len(events) == 5 and all(e["name"] == "search" for e in events)
    assert all(e["output"].startswith("[1] ") for e in events)  # the corpus answered

    openai_server.handler = lambda request: Reply("<answer>Atlantis</answer>")
    wrong = run_suite(openai_server, "qa", tmp_path / "wrong", "--limit", "5")
    assert [r["score"] for r in wrong] == [0.0] * 10


def gsm_symbolic_answers(samples: int) -> dict[str, str]:
    """The questions and answers the suite's ``rg:gsm_symbolic-v0`` samples hold (sample
    ``i`` is played with seed ``i``)."""
    from gem_eval import make

    out = {}
    for seed in range(samples):
        env = make("rg:gsm_symbolic-v0")
        env.reset(seed=seed)
        inner: Any = env.unwrapped
        out[inner.question] = f"<answer>{inner.entry['answer']}</answer>"
    return out


@pytest.mark.docker
def test_math_suite_oracle_with_and_without_python(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    golds = {r["question"]: f"\\boxed{{{r['answer']}}}" for r in rows("tasks/math/basic.jsonl")}
    golds |= gsm_symbolic_answers(3)

    def handler(request: dict[str, Any]) -> Reply:
        if request.get("tools") and not tool_results(request):  # work it out in python
            return Reply(tool_calls=[ToolCallSpec("python", {"code": "print(6 * 7)"})])
        return oracle(golds)(request)

    openai_server.handler = handler
    recs = run_suite(openai_server, "math", tmp_path, "--limit", "3")
    ended = [(r["task_id"], r["outcome"], (r["trajectory"] or {}).get("error")) for r in recs]
    assert len(recs) == 9 and all(r["outcome"] == "completed" for r in recs), ended
    assert [r["score"] for r in recs] == [1.0] * 9
    python_runs = [r for r in recs if r["task_id"] == "math-python"]
    events = [e for r in python_runs for s in r["trajectory"]["steps"] for e in s["tool_events"]]
    assert [e["output"] for e in events] == ["42"] * 3  # ran in the sandbox


@pytest.mark.local_model
def test_the_local_gemma_model_plays_the_math_and_qa_suites(tmp_path: Path) -> None:
    """The real local model through the CLI: every episode is played to a scored end
    (the 270M base model rarely answers right; what matters is that nothing breaks)."""
    for suite in ("math", "qa"):
        result = gem_eval(
            "run",
            "--suite",
            suite,
            "--model",
            "local/gemma3-270m",
            "--limit",
            "1",
            "--sandbox",
            "local",
            "-q",
            "-M",
            "max_tokens=96",
            results=tmp_path / suite,
            timeout=600,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        [run] = run_dirs(tmp_path / suite)
        recs = records(run)
        assert recs and all(r["outcome"] in ("completed", "truncated") for r in recs), recs
        assert all(r["score"] is not None for r in recs)


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```"


def humaneval_answers(samples: int) -> dict[str, str]:
    """Prompts and reference solutions of the suite's HumanEval samples (seed ``i``)."""
    from gem_eval import make

    out = {}
    for seed in range(samples):
        env = make("code:HumanEval-v0")
        env.reset(seed=seed)
        inner: Any = env.unwrapped
        problem = inner.problem
        out[problem["prompt"].strip()] = fenced(problem["prompt"] + problem["canonical_solution"])
        env.close()
    return out


@pytest.mark.docker
def test_code_suite_oracle_passes_and_a_wrong_program_fails(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    golds = {r["statement"].strip(): fenced(r["solution"]) for r in rows("tasks/code/stdio.jsonl")}
    golds |= {
        r["question"].strip(): fenced(r["solution"]) for r in rows("tasks/code/functions.jsonl")
    }
    golds |= humaneval_answers(2)
    openai_server.handler = oracle(golds)
    recs = run_suite(openai_server, "code", tmp_path / "oracle", "--limit", "2")
    assert len(recs) == 6 and all(r["outcome"] == "completed" for r in recs), recs
    assert [r["score"] for r in recs] == [1.0] * 6

    # A program that runs but answers nothing right (near misses are unit-tested).
    wrong = {q: fenced("print('no idea')") for q in golds}
    openai_server.handler = oracle(wrong)
    recs = run_suite(openai_server, "code", tmp_path / "wrong", "--limit", "2")
    assert all(r["outcome"] == "completed" for r in recs)
    assert [r["score"] for r in recs] == [0.0] * 6
