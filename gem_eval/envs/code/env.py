"""The code envs: write a Python program; tests run in a sandbox grade it.

* ``code:Code-v0`` (:class:`CodeEnv`): a function or module checked by Python test code
  (top-level asserts, ``def check(candidate)`` with an ``entry_point``, ``test_*``
  functions, or a list of snippets).
* ``code:StdIO-v0`` (:class:`StdIOEnv`): a program reading stdin and writing stdout,
  checked against ``[{"input": ..., "output": ...}]`` pairs.

::

    env = make("code:Code-v0", question="Write add(a, b).", tests="assert add(1, 2) == 3")
    env.reset(seed=0)
    env.step("```python\\ndef add(a, b):\\n    return a + b\\n```")  # reward 1.0

The answer's code is its last ```python block (:func:`~.extract.extract_code`); no code is
a format error. All the cases run in one sandbox exec, each with ``timeout_s``
(:mod:`.runner`). Reward 1.0 when every case passes, else 0.0 (``partial_credit=True``:
the fraction passed). ``info`` carries ``tests_passed``, ``tests_total``, ``fraction``,
``grade_s`` and, on a failure, ``failure`` (the first failing case and why, truncated).

The sandbox is the episode's (the executor attaches it; Docker by default) or, used on
its own, a bubblewrap sandbox the env starts and removes in ``close``. A failing sandbox
raises :class:`~gem_eval.errors.SandboxError` (an infrastructure error, never a score).
"""

from __future__ import annotations

import json
from collections.abc import Coroutine
from typing import Any, ClassVar, TypeVar

from gem_eval.core import StepResult
from gem_eval.envs.code.extract import TestCases, defines, extract_code, split_tests
from gem_eval.envs.code.runner import TestJob, run_tests
from gem_eval.envs.question import Grade, QuestionEnv
from gem_eval.envs.sandboxed import SandboxedEnv

T = TypeVar("T")
_FAILURE_CHARS = 500


class CodeEnv(SandboxedEnv, QuestionEnv):
    """Write Python code that passes Python tests (see the module docstring).

    Args:
        question: The task (a statement, or a signature with its docstring).
        tests: Test code, or a list of snippets (one case each); a JSON list in a string
            is read as a list.
        entry_point: The function under test: ``check(candidate)`` is called with it,
            and an answer that defines it is run after ``starter_code``.
        starter_code: Code the answer builds on (a HumanEval prompt): run before an
            answer that defines ``entry_point``, or completed by one that does not.
        timeout_s: Wall-clock seconds per case (and for loading the program).
        max_grade_s: Seconds for all the cases; those not reached by then fail.
        memory_mb: Address-space limit of the program (``None``: the sandbox's).
        partial_credit: Reward the fraction of cases passed instead of 0.0.
        fail_fast: Stop at the first failing case (faster; ``fraction`` then counts
            the cases not run as failed).
        max_turns: Answers allowed.
        format_reward: Reward for an answer with no code in it.
        prompt: Template of the first observation; ``{question}`` is replaced.
        dataset: A file of rows to draw problems from when ``question`` is not given
            (columns ``question_field``, ``tests_field``, and optionally ``entry_point``
            and ``starter_code``).
        question_field: The rows' question column.
        tests_field: The rows' tests column.
    """

    answer_instruction: ClassVar[str] = (
        "Write your solution in Python, in a single ```python code block."
    )
    format_hint: ClassVar[str] = "No code found: put your solution in a ```python code block."

    def __init__(
        self,
        question: str | None = None,
        tests: Any = None,
        *,
        entry_point: str | None = None,
        starter_code: str | None = None,
        timeout_s: float = 5.0,
        max_grade_s: float = 60.0,
        memory_mb: int | None = 1024,
        partial_credit: bool = False,
        fail_fast: bool = False,
        max_turns: int = 1,
        format_reward: float = -0.1,
        prompt: str | None = None,
        dataset: str | None = None,
        question_field: str = "question",
        tests_field: str = "tests",
    ) -> None:
        if timeout_s <= 0 or max_grade_s <= 0:
            raise ValueError("timeout_s and max_grade_s must be positive")
        super().__init__(
            question,
            tests,
            max_turns=max_turns,
            format_reward=format_reward,
            prompt=prompt,
            dataset=dataset,
            question_field=question_field,
            answer_field=tests_field,
        )
        self.defaults = {"entry_point": entry_point, "starter_code": starter_code}
        self.entry_point, self.starter_code = entry_point, starter_code
        self.timeout_s, self.max_grade_s, self.memory_mb = timeout_s, max_grade_s, memory_mb
        self.partial_credit, self.fail_fast = partial_credit, fail_fast
        self.labels: list[str] = []
        if question is not None:
            if tests is None:
                raise ValueError("give the tests with the question")
            self.load_tests(tests)

    # -- problems -------------------------------------------------------------------------

    def load_row(self, row: dict[str, Any]) -> None:
        super().load_row(row)
        for name, default in self.defaults.items():
            setattr(self, name, row.get(name) or default)
        self.load_tests(self.answer)

    def load_tests(self, tests: Any) -> None:
        """Check and keep the tests (raises ``ValueError`` for tests that cannot run)."""
        self.cases: TestCases = split_tests(_maybe_json(tests), self.entry_point)
        self.labels = self.cases.labels

    def program(self, code: str) -> str:
        """The program that runs: the answer, after or completing ``starter_code``."""
        starter = self.starter_code
        if not starter:
            return code
        if self.entry_point and defines(code, self.entry_point):
            return f"{starter.rstrip()}\n\n\n{code}"
        return starter + code

    def job(self, code: str) -> TestJob:
        """The :class:`~.runner.TestJob` for an answer's code."""
        return TestJob(
            mode="function",
            program=self.program(code),
            steps=self.cases.steps,
            **self._limits(),
        )

    def _limits(self) -> dict[str, Any]:
        return {
            "timeout_s": self.timeout_s,
            "total_s": self.max_grade_s,
            "memory_mb": self.memory_mb,
            "fail_fast": self.fail_fast,
        }

    # -- answers --------------------------------------------------------------------------

    def extract(self, action: str) -> str | None:
        return extract_code(action)

    def step(self, action: str) -> StepResult:
        if self.done:  # do not run the tests of an answer that cannot count
            return self._result(None, None)
        return super().step(action)

    async def astep(self, action: str) -> StepResult:
        if self.done:
            return self._result(None, None)
        return await super().astep(action)

    def grade(self, extracted: str) -> Grade:
        return _run_sync(self.agrade(extracted))

    async def agrade(self, extracted: str) -> Grade:
        report = await run_tests(await self.sandbox(), self.job(extracted))
        detail: dict[str, Any] = {
            "tests_passed": report.passed,
            "tests_total": report.total,
            "fraction": round(report.fraction, 4),
            "grade_s": round(report.elapsed_s, 3),
        }
        failure = report.first_failure
        if failure is not None:
            index, message = failure
            label = self.labels[index] if index < len(self.labels) else ""
            where = f"test {index + 1} of {report.total}" + (f" ({label})" if label else "")
            detail["failure"] = _truncate(f"{where}: {message}")
        passed = report.all_passed
        score = 1.0 if passed else (report.fraction if self.partial_credit else 0.0)
        return Grade(correct=passed, score=score, detail=detail)


class StdIOEnv(CodeEnv):
    """Write a program that turns each test's input into its output (stdin to stdout).

    Args:
        question: The problem statement.
        tests: ``[{"input": ..., "output": ...}]``, ``[[input, output]]``, or
            CodeContests' ``{"input": [...], "output": [...]}`` (a JSON string too).
        timeout_s: Wall-clock seconds per test.
        max_grade_s: Seconds for all the tests.
        memory_mb: Address-space limit of the program (``None``: the sandbox's).
        partial_credit: Reward the fraction of tests passed instead of 0.0.
        fail_fast: Stop at the first failing test.
        max_turns: Answers allowed.
        format_reward: Reward for an answer with no code in it.
        prompt: Template of the first observation; ``{question}`` is replaced.
        dataset: A file of rows to draw problems from when ``question`` is not given.
        question_field: The rows' question column.
        tests_field: The rows' tests column.

    Output is compared line by line, token by token: runs of spaces, trailing spaces and
    trailing blank lines do not matter. A non-zero exit status fails the test.
    """

    answer_instruction: ClassVar[str] = (
        "Write a complete Python program that reads standard input and writes standard "
        "output, in a single ```python code block."
    )

    def __init__(
        self,
        question: str | None = None,
        tests: Any = None,
        *,
        timeout_s: float = 5.0,
        max_grade_s: float = 60.0,
        memory_mb: int | None = 1024,
        partial_credit: bool = False,
        fail_fast: bool = False,
        max_turns: int = 1,
        format_reward: float = -0.1,
        prompt: str | None = None,
        dataset: str | None = None,
        question_field: str = "question",
        tests_field: str = "tests",
    ) -> None:
        super().__init__(
            question,
            tests,
            timeout_s=timeout_s,
            max_grade_s=max_grade_s,
            memory_mb=memory_mb,
            partial_credit=partial_credit,
            fail_fast=fail_fast,
            max_turns=max_turns,
            format_reward=format_reward,
            prompt=prompt,
            dataset=dataset,
            question_field=question_field,
            tests_field=tests_field,
        )

    def load_tests(self, tests: Any) -> None:
        self.pairs = io_pairs(tests)
        self.labels = []

    def program(self, code: str) -> str:
        return code

    def job(self, code: str) -> TestJob:
        return TestJob(mode="stdio", program=code, cases=self.pairs, **self._limits())


def io_pairs(tests: Any) -> list[tuple[str, str]]:
    """``(input, output)`` pairs from the forms :class:`StdIOEnv` takes.

    Raises:
        ValueError: Not one of those forms, or no pairs.
    """
    tests = _maybe_json(tests)
    if isinstance(tests, dict) and isinstance(tests.get("input"), list):
        outputs = tests.get("output")
        if not isinstance(outputs, list) or len(outputs) != len(tests["input"]):
            raise ValueError("tests: 'input' and 'output' must be lists of the same length")
        tests = list(zip(tests["input"], outputs))
    if not isinstance(tests, list):
        raise ValueError("tests must be a list of {input, output} pairs")
    pairs: list[tuple[str, str]] = []
    for item in tests:
        if isinstance(item, dict) and "input" in item and "output" in item:
            pairs.append((str(item["input"]), str(item["output"])))
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            pairs.append((str(item[0]), str(item[1])))
        else:
            raise ValueError(f"a test must be {{input, output}}, not {str(item)[:80]!r}")
    if not pairs:
        raise ValueError("tests: no input/output pairs")
    return pairs


def _maybe_json(tests: Any) -> Any:
    """A JSON list or object given as a string (a CSV cell), decoded; else ``tests``."""
    if isinstance(tests, str) and tests.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(tests)
        except ValueError:
            return tests
    return tests


def _truncate(text: str, limit: int = _FAILURE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, also when a loop runs in this thread."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
