"""The math family: extraction, normal forms, the grader and its workers, the env, the suite."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gem_eval import make
from gem_eval.envs.math import MathEnv
from gem_eval.envs.math.extract import (
    balanced_braces,
    extract_answer,
    gold_answer,
    last_boxed,
    normalize,
    string_verdict,
)
from gem_eval.envs.math.grader import GraderError, GraderPool, grade_answer, shared_pool
from gem_eval.errors import EnvArgumentError

ROOT = Path(__file__).resolve().parents[2]
BASIC = ROOT / "tasks" / "math" / "basic.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(line) for line in BASIC.read_text().splitlines()]
PATHOLOGICAL = ["9^{9^{9^{9}}}", "(" * 30 + "1" + ")" * 30]


@pytest.fixture
def pool() -> Iterator[GraderPool]:
    """A private pool of one worker (timeouts in it do not disturb the shared pool)."""
    private = GraderPool(1)
    yield private
    private.close()


def near_miss(answer: str) -> str:
    """``answer`` with its first digit changed: a wrong answer of the same shape."""
    match = re.search(r"\d", answer)
    assert match, answer
    digit = (int(match.group()) + 1) % 10
    return f"{answer[: match.start()]}{digit}{answer[match.end() :]}"


# -- extraction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", "42"),
        ("\\boxed{1} then \\boxed{2}", "2"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{\\dfrac{\\sqrt{3}}{2}}", "\\dfrac{\\sqrt{3}}{2}"),
        ("\\fbox{7}", "7"),
        ("\\boxed { 5 }", "5"),
        ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),  # escaped braces are not grouping
        ("\\boxed{\\}}", "\\}"),
        ("\\boxed{3} and an unclosed \\boxed{4", "3"),
        ("\\boxed{\\boxed{8}}", "8"),
        ("\\boxed{}", None),
        ("no answer here", None),
        ("\\boxed{", None),
        ("x = 3", None),  # a final equation is working, not an answer
        ("<answer>17</answer>", "17"),
        ("<answer>1</answer> <ANSWER> $2$ </Answer>", "2"),
        ("So the answer is $\\frac{3}{4}$.", "\\frac{3}{4}"),
        ("**Final Answer:** 12 cm", "12 cm"),
        ("Answer: 5\nthanks", "5"),
        ("the answer is 3 ... \\boxed{4}", "4"),  # a box beats the fallbacks
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


def test_boxed_only_ignores_the_fallbacks() -> None:
    assert extract_answer("The answer is 5.", boxed_only=True) is None
    assert extract_answer("<answer>5</answer>", boxed_only=True) is None
    assert extract_answer("\\boxed{5}", boxed_only=True) == "5"


def test_extraction_is_linear_on_adversarial_text() -> None:
    texts = ["\\boxed{" * 100_000, "{" * 200_000 + "\\boxed{1}", "</answer>" + "<answer>" * 50_000]
    started = time.perf_counter()
    for text in texts:
        extract_answer(text)
    assert time.perf_counter() - started < 2.0


@given(st.text())
def test_extraction_never_raises(text: str) -> None:
    boxed = last_boxed(text)
    assert boxed is None or boxed in text
    answer = extract_answer(text)
    assert answer is None or answer.strip()
    normalize(text)


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("42", "42"),
        (42, "42"),
        (0.5, "0.5"),
        ("So $x = 2$, and the answer is $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
        ("Half of 10 is 5.\n#### 5", "5"),
        ("  ", None),
        (None, None),
    ],
)
def test_gold_answer(answer: Any, gold: str | None) -> None:
    assert gold_answer(answer) == gold


@pytest.mark.parametrize(
    ("answer", "normal"),
    [
        ("$\\dfrac{1}{2}$", "\\frac{1}{2}"),
        ("\\tfrac12", "\\frac{1}{2}"),
        ("1,000", "1000"),
        ("1{,}234.50", "1234.5"),
        ("1\\,000", "1000"),
        ("10.0", "10"),
        ("5 cm", "5"),
        ("5\\text{ cm}^2", "5"),
        ("60 km/h", "60"),
        ("\\$12", "12"),
        ("12\\text{ dollars}", "12"),
        ("25\\%", "25"),
        ("30^\\circ", "30"),
        ("30°", "30"),
        ("\\left( 1, 2 \\right]", "(1,2]"),
        ("\\text{Monday}", "Monday"),
        ("3 pi", "3pi"),  # pi is not a unit
        ("5 x", "5x"),  # nor is a one-letter word
        ("\\begin{pmatrix} 3 \\\\ 7 \\end{pmatrix}", "\\begin{pmatrix}3\\\\7\\end{pmatrix}"),
        ("+7.", "7"),
    ],
)
def test_normalize(answer: str, normal: str) -> None:
    assert normalize(answer) == normal


@pytest.mark.parametrize(
    ("gold", "pred", "verdict"),
    [
        ("1000", "1,000.00", True),
        ("7", "007", True),
        ("7", "8", False),
        ("Monday", "MONDAY", True),
        ("\\text{odd}", "even", False),
        ("1/2", "0.5", None),  # takes math-verify
        ("ab", "ba", None),  # two letters may be a product
        ("3", "", False),
    ],
)
def test_string_verdict(gold: str, pred: str, verdict: bool | None) -> None:
    assert string_verdict(gold, pred) is verdict


@pytest.mark.parametrize(
    ("text", "balanced"),
    [("\\frac{1}{2}", True), ("\\{1\\}", True), ("1}{2", False), ("{", False), ("\\\\{", False)],
)
def test_balanced_braces(text: str, balanced: bool) -> None:
    assert balanced_braces(text) is balanced


# -- grading ------------------------------------------------------------------------------


EQUIVALENT = [
    ("\\frac{1}{2}", "0.5"),
    ("1/2", "\\dfrac{1}{2}"),
    ("0.375", "\\frac{3}{8}"),
    ("-\\frac{7}{4}", "-1.75"),
    ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}"),
    ("6\\sqrt{2}", "\\sqrt{72}"),
    ("\\{1, 2, 3\\}", "\\{3, 2, 1\\}"),
    ("\\pm\\sqrt{2}", "-\\sqrt{2}, \\sqrt{2}"),
    ("(1, 3]", "\\left(1, 3\\right]"),
    ("(4, \\infty)", "(4,\\infty)"),
    ("x^2 - x - 6", "(x+2)(x-3)"),
    ("5", "5 cm"),
    ("5", "5\\text{ cm}"),
    ("12", "\\$12"),
    ("12", "12 \\text{ dollars}"),
    ("25\\%", "25"),
    ("0.25", "25\\%"),
    ("1000", "1,000"),
    ("1234.5", "\\$1{,}234.50"),
    ("720^\\circ", "720"),
    ("1/3", "0.333333"),
    ("9\\pi", "9 \\pi"),
    ("\\begin{pmatrix} 3 \\\\ 7 \\end{pmatrix}", "\\begin{pmatrix}3\\\\7\\end{pmatrix}"),
    ("Monday", "\\text{monday}"),
    ("\\text{(B)}", "B"),
]

DIFFERENT = [
    ("\\frac{1}{2}", "\\frac{2}{1}"),
    ("1/3", "0.33"),
    ("(1, 3]", "[1, 3]"),
    ("[1, 3)", "(1, 3]"),
    ("\\{2, 3\\}", "\\{2, 4\\}"),
    ("x^2 - x - 6", "x^2 + x - 6"),
    ("\\sqrt{2}", "2"),
    ("-\\frac{7}{4}", "\\frac{7}{4}"),
    ("5", "5x"),
    ("3", "3 pi"),
    ("25", "0.25"),
    ("391", "392"),
    ("Monday", "Dynamo"),  # math-verify alone would call these equal (same letters)
    ("2", "\\pm 2"),
    ("1", "1}{2"),  # unbalanced: wrapped in \\boxed{} it would read as 1
]


@pytest.mark.parametrize(("gold", "pred"), EQUIVALENT)
def test_equivalent_answers_are_correct(gold: str, pred: str) -> None:
    grade = grade_answer(gold, pred)
    assert grade.correct, grade.detail
    assert grade.score == 1.0
    assert grade.detail["grader"] in ("exact", "math_verify")


@pytest.mark.parametrize(("gold", "pred"), DIFFERENT)
def test_different_answers_are_wrong(gold: str, pred: str) -> None:
    grade = grade_answer(gold, pred)
    assert not grade.correct, grade.detail
    assert grade.score == 0.0


def test_fast_path_starts_no_worker(pool: GraderPool) -> None:
    for gold, pred in [("5", "5 cm"), ("1000", "1,000"), ("3", "4"), ("Monday", "monday")]:
        assert grade_answer(gold, pred, pool=pool).detail["grader"] == "exact"
    assert not pool._started
    assert grade_answer("1/2", "0.5", pool=pool).detail["grader"] == "math_verify"


def test_detail_holds_the_normal_forms() -> None:
    detail = grade_answer("\\dfrac{1}{2}", "$0.50$").detail
    assert detail == {
        "normalized_gold": "\\frac{1}{2}",
        "normalized_pred": "0.5",
        "grader": "math_verify",
    }


def test_answers_too_long_or_without_gold_are_errors() -> None:
    assert grade_answer("1", "1+" * 600 + "0").detail["grader"] == "error"
    assert grade_answer("  ", "1").detail["grader_error"] == "no gold answer"


@pytest.mark.parametrize("answer", PATHOLOGICAL)
def test_pathological_answers_time_out_and_the_worker_recovers(
    pool: GraderPool, answer: str
) -> None:
    started = time.perf_counter()
    grade = grade_answer("3", answer, timeout_s=1.0, pool=pool)
    assert time.perf_counter() - started < 3.0
    assert grade.detail["grader"] == "timeout" and grade.score == 0.0
    assert pool.restarts == 1
    assert grade_answer("1/2", "0.5", pool=pool).correct  # a fresh worker took over


def test_a_crashed_worker_is_replaced(pool: GraderPool) -> None:
    assert pool.verify("1/2", "0.5")
    for worker in list(pool._live):
        worker.proc.kill()
        worker.proc.wait()
    assert pool.verify("1/3", "\\frac{2}{6}")


def test_a_closed_pool_grades_as_error(pool: GraderPool) -> None:
    pool.close()
    pool.close()
    with pytest.raises(GraderError):
        pool.verify("1", "2/2")
    assert grade_answer("1", "2/2", pool=pool).detail["grader"] == "error"


def test_closing_a_pool_in_use_raises_nowhere(pool: GraderPool) -> None:
    grades: list[str] = []

    def work() -> None:
        for i in range(20):
            grades.append(grade_answer(f"{i}/7", f"{2 * i}/14", pool=pool).detail["grader"])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    pool.close()
    for thread in threads:
        thread.join(timeout=30)
    assert len(grades) == 80 and set(grades) <= {"math_verify", "error"}


def test_a_worker_that_cannot_start_grades_as_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from gem_eval.envs.math import grader

    monkeypatch.setattr(grader, "_WORKER_CODE", "import sys; sys.exit({parent} * 0 + 1)")
    broken = GraderPool(1)
    try:
        detail = grade_answer("1/2", "0.5", pool=broken).detail
        assert (detail["grader"], detail["grader_error"]) == ("error", "the grader worker exited")
    finally:
        broken.close()


def test_grading_from_many_threads_at_once() -> None:
    cases = [(g, p, True) for g, p in EQUIVALENT] + [(g, p, False) for g, p in DIFFERENT]
    failures: list[str] = []

    def work(offset: int) -> None:
        for i in range(len(cases)):
            gold, pred, expected = cases[(i + offset) % len(cases)]
            grade = grade_answer(gold, pred)
            if grade.correct is not expected:
                failures.append(f"{gold!r} vs {pred!r}: {grade.detail}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_fuzzed_answers_never_raise(text: str) -> None:
    grade = grade_answer("3", text, timeout_s=5.0)
    assert grade.score in (0.0, 1.0)


def test_importing_the_env_loads_no_heavy_package() -> None:
    code = (
        "import sys, gem_eval; gem_eval.make('math:Math-v0', question='q', answer='1'); "
        "print(sorted(m for m in ('math_verify', 'sympy', 'latex2sympy2_extended') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the env ------------------------------------------------------------------------------


def test_env_grades_an_answer() -> None:
    env = make("math:Math-v0", question="What is 6 * 7?", answer=42)
    obs, _ = env.reset(seed=0)
    assert "What is 6 * 7?" in obs and "\\boxed{}" in obs
    obs, reward, terminated, truncated, info = env.step("6 * 7 = \\boxed{42}")
    assert (reward, terminated, truncated, info["success"]) == (1.0, True, False, True)
    assert info["grader"] == "exact" and info["extracted"] == "42"
    assert MathEnv.blocking


def test_env_format_error_and_wrong_answer() -> None:
    env = make("math:Math-v0", question="1/2 as a decimal?", answer="0.5", max_turns=3)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("I think it is a half")
    assert (reward, terminated, info["format_error"]) == (-0.1, False, True)
    _, reward, terminated, _, info = env.step("\\boxed{0.4}")
    assert (reward, terminated, info["success"]) == (0.0, False, False)
    _, reward, terminated, _, info = env.step("\\boxed{\\frac{1}{2}}")
    assert (reward, terminated, info["grader"]) == (1.0, True, "math_verify")


def test_env_settings() -> None:
    env = make("math:Math-v0", question="q", answer=["1/2", "0.5"], boxed_only=True)
    env.reset(seed=0)
    assert env.step("The answer is 0.5")[1] == -0.1
    env = make("math:Math-v0", question="q", answer=["2", "0.5"])
    env.reset(seed=0)
    assert env.step("\\boxed{1/2}")[1] == 1.0
    with pytest.raises(EnvArgumentError):
        make("math:Math-v0", question="q", answer="1", grader_timeout_s=0)


def test_env_without_gold_grades_as_error() -> None:
    env = make("math:Math-v0", question="q")
    env.reset(seed=0)
    info = env.step("\\boxed{1}")[4]
    assert (info["success"], info["grader"]) == (False, "error")


def test_every_shipped_gold_answer_scores_one() -> None:
    env = make("math:Math-v0", dataset=str(BASIC))
    for index, row in enumerate(ROWS):
        obs, _ = env.reset(seed=index)
        assert row["question"] in obs
        _, reward, _, _, info = env.step(f"Working... so \\boxed{{{row['answer']}}}")
        assert reward == 1.0, (row, info)


def test_every_shipped_gold_answer_parses_in_math_verify() -> None:
    for row in ROWS:
        assert shared_pool().verify(row["answer"], row["answer"]), row


@pytest.mark.parametrize("row", ROWS, ids=[r["answer"] for r in ROWS])
def test_near_misses_of_shipped_answers_score_zero(row: dict[str, Any]) -> None:
    env = make("math:Math-v0", question=row["question"], answer=row["answer"])
    env.reset(seed=0)
    _, reward, _, _, info = env.step(f"\\boxed{{{near_miss(row['answer'])}}}")
    assert reward == 0.0, info


@pytest.mark.parametrize(
    "action", ["", "}}}{{{", "\\boxed{", "\\boxed{}}", "\\boxed{\\frac{1}{", "\\boxed{\x00}"]
)
def test_garbage_actions_never_raise(action: str) -> None:
    env = make("math:Math-v0", question="q", answer="3")
    env.reset(seed=0)
    assert env.step(action)[1] in (-0.1, 0.0)


def test_envs_step_concurrently_under_asyncio() -> None:
    async def play(index: int) -> float:
        row = ROWS[index % len(ROWS)]
        env = make("math:Math-v0", question=row["question"], answer=row["answer"])
        await env.areset(seed=index)
        answer = row["answer"] if index % 2 else near_miss(row["answer"])
        return (await env.astep(f"\\boxed{{{answer}}}"))[1]

    async def main() -> list[float]:
        return await asyncio.gather(*(play(i) for i in range(24)))

    rewards = asyncio.run(main())
    assert rewards == [float(i % 2) for i in range(24)]


# -- the suite ----------------------------------------------------------------------------


def test_math_suite_loads() -> None:
    from gem_eval.suites.loader import load_suite

    suite = load_suite(ROOT / "suites" / "math.yaml")
    tasks = {task.spec.id: task for task in suite.tasks}
    assert set(tasks) == {"math", "math-python", "gsm_symbolic"}
    assert tasks["math"].rows is not None and len(tasks["math"].rows) == len(ROWS)
    assert [tool.name for tool in tasks["math-python"].spec.tools] == ["python"]
    assert tasks["gsm_symbolic"].spec.env_id == "rg:gsm_symbolic-v0"
