"""``QuestionEnv``: the shared shape of the math, QA, code and ReasoningGym envs.

One question per episode; the agent answers in its action, the env extracts the answer
(``\\boxed{...}``, ``<answer>...</answer>``, a code block) and grades it::

    env = make("math:Math-v0", question="What is 6 * 7?", answer="42")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("6 * 7 = \\\\boxed{42}")
    # reward 1.0, terminated, info["success"] is True

Rewards: the grade's score (1.0 correct, 0.0 wrong; partial for graders that give it);
``format_reward`` (default -0.1) when no answer can be extracted, with an observation
saying what form the answer must take. With ``max_turns > 1`` a wrong answer is told so
and may try again; the episode ends when the answer is correct or the turns run out.

Where questions come from: ``question``/``answer`` given (a suite's ``dataset:`` maps
each row's columns onto them), or a ``dataset`` file of rows (JSONL/CSV/Parquet) from
which ``reset(seed)`` picks row ``seed % len(rows)``.

Grading may be slow (a worker process, a sandbox): subclasses implement ``grade``
(sync; run in a thread from ``astep`` when the class is ``blocking``) or override
``agrade`` (async, e.g. in a sandbox).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from gem_eval.core import Env, ResetResult, StepResult


@dataclass
class Grade:
    """How good an extracted answer is.

    Attributes:
        correct: The answer is right (the episode is a success).
        score: The reward, usually 1.0 or 0.0 (a fraction for partial credit).
        detail: Extra facts for ``info`` (the normalised answer, tests passed, ...).
    """

    correct: bool
    score: float
    detail: dict[str, Any] = field(default_factory=dict)


class QuestionEnv(Env):
    """One question, up to ``max_turns`` answers (see the module docstring).

    Args:
        question: The question; ``None`` to draw one from ``dataset`` at reset.
        answer: The gold answer (its type depends on the family).
        max_turns: Answers allowed.
        format_reward: Reward for an action from which no answer can be extracted.
        prompt: Template of the first observation; ``{question}`` is replaced.
        dataset: A file of rows to draw questions from when ``question`` is not given.
        question_field: The rows' question column.
        answer_field: The rows' answer column.
    """

    answer_instruction: ClassVar[str] = "Put your final answer within \\boxed{}."
    """Appended to the question by the default prompt."""
    format_hint: ClassVar[str] = "No final answer found: put it within \\boxed{}."
    """The observation after an action with no extractable answer."""

    def __init__(
        self,
        question: str | None = None,
        answer: Any = None,
        *,
        max_turns: int = 1,
        format_reward: float = -0.1,
        prompt: str | None = None,
        dataset: str | None = None,
        question_field: str = "question",
        answer_field: str = "answer",
    ) -> None:
        super().__init__()
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        if question is None and dataset is None:
            raise ValueError("give a question (and its answer), or a dataset to draw from")
        if prompt is not None and "{question}" not in prompt:
            raise ValueError("prompt must contain {question}")
        self.fixed = (question, answer) if question is not None else None
        self.max_turns, self.format_reward, self.prompt = max_turns, format_reward, prompt
        self.rows = _read_rows(dataset) if dataset is not None else []
        self.question_field, self.answer_field = question_field, answer_field
        if self.rows and question_field not in self.rows[0]:
            raise ValueError(f"{dataset}: rows have no {question_field!r} column")
        self.question: str = question or ""
        self.answer: Any = answer
        self.row: dict[str, Any] = {}
        self.turn = 0
        self.done = False

    # -- what subclasses provide ------------------------------------------------------

    @abstractmethod
    def extract(self, action: str) -> str | None:
        """The answer written in ``action``, or ``None`` when there is none."""

    @abstractmethod
    def grade(self, extracted: str) -> Grade:
        """Grade an extracted answer against ``self.answer``."""

    async def agrade(self, extracted: str) -> Grade:
        """Async :meth:`grade` (in a worker thread when the class is ``blocking``)."""
        if self.blocking:
            import asyncio

            return await asyncio.to_thread(self.grade, extracted)
        return self.grade(extracted)

    def load_row(self, row: dict[str, Any]) -> None:
        """Take a question drawn from the dataset (override for extra columns)."""
        self.question = str(row[self.question_field])
        self.answer = row.get(self.answer_field)

    def render_prompt(self) -> str:
        """The first observation."""
        if self.prompt is not None:
            return self.prompt.replace("{question}", self.question)
        return f"{self.question}\n\n{self.answer_instruction}"

    # -- the episode --------------------------------------------------------------------

    def turn_limit(self) -> int:
        """``max_turns``: every answer takes a turn, readable or not."""
        return self.max_turns

    def reset(self, seed: int | None = None) -> ResetResult:
        super().reset(seed)
        if self.fixed is None:
            count = len(self.rows)
            index = seed % count if seed is not None else self.rng.randrange(count)
            self.row = dict(self.rows[index])
            self.load_row(self.row)
        self.turn, self.done = 0, False
        return self.render_prompt(), {"max_turns": self.max_turns}

    def step(self, action: str) -> StepResult:
        if self.done:
            return _over()
        extracted = self.extract(action)
        return self._result(extracted, None if extracted is None else self.grade(extracted))

    async def astep(self, action: str) -> StepResult:
        if self.done:  # checked before grading: grading may run code
            return _over()
        extracted = self.extract(action)
        grade = None if extracted is None else await self.agrade(extracted)
        return self._result(extracted, grade)

    def _result(self, extracted: str | None, grade: Grade | None) -> StepResult:
        self.turn += 1
        out_of_turns = self.turn >= self.max_turns
        info: dict[str, Any] = {"extracted": extracted, "turn": self.turn}
        if grade is None:
            info.update(success=False, format_error=True)
            self.done = out_of_turns
            return self.format_hint, self.format_reward, out_of_turns, False, info
        info.update(success=grade.correct, format_error=False, **grade.detail)
        self.done = grade.correct or out_of_turns
        if grade.correct:
            obs = "Correct."
        elif out_of_turns:
            obs = "Incorrect."
        else:
            obs = "Incorrect. Try again."
        return obs, grade.score, self.done, False, info


def _over() -> StepResult:
    return "The episode is over.", 0.0, True, False, {"error": "episode_over"}


def _read_rows(path: str) -> list[dict[str, Any]]:
    """Rows of a JSONL, CSV or Parquet file: a relative path is looked up in the working
    directory, then the bundled root (``tasks/math/basic.jsonl`` works installed)."""
    from gem_eval.bundled import bundled_root
    from gem_eval.datasets import Dataset, load_rows

    rows = load_rows(Dataset(path=path), base_dirs=[Path.cwd(), bundled_root()])
    if not rows:
        raise ValueError(f"{path}: the dataset has no rows")
    return rows
