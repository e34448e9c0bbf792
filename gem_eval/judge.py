"""A model judge: another model grades an open-ended answer against a rubric.

A task with ``scorer: judge`` names its judge in YAML (:class:`JudgeSpec`)::

    scorer: judge
    judge:
      model: openai/gpt-4o-mini
      criterion: names the lighthouse's designer and the year it was lit

The rubric is a template; ``{question}`` (the episode's first observation), ``{answer}``
(the model's final answer), ``{criterion}`` (the spec's criterion, else the env's
reference answer), ``{target}`` (the env's reference answer), ``{transcript}`` (the whole
conversation) and ``{instructions}`` (how to write the grade) are replaced; any other
brace is left as written, so a rubric may hold JSON. The judge ends its reply with
``GRADE: X`` (the last such line counts, in any case); ``grades`` maps each X to a score.
A reply without a grade is answered once more, asking for one (``max_attempts`` in all).

:func:`judge_answer` returns a :class:`JudgeVerdict`; it never raises for the judge's
failures: a call that failed for good, or replies that never held a grade, give a
verdict with ``error`` set and no score, which the runner records as ``judge_error``
(not scored, replayed by ``--resume``): a judge's failure is never a 0 for the model.
"""

from __future__ import annotations

import re
import time
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from gem_eval.errors import ModelCallError
from gem_eval.models.base import GenerateConfig, Message, Model, Usage

DEFAULT_RUBRIC = """\
You are grading a submitted answer to a task against a criterion.

[BEGIN DATA]
***
[Task]: {question}
***
[Submission]: {answer}
***
[Criterion]: {criterion}
***
[END DATA]

Does the submission meet the criterion? {instructions}"""
"""The rubric used when a judge names none (after inspect_ai's ``model_graded_qa``)."""

DEFAULT_GRADES: dict[str, float] = {"C": 1.0, "P": 0.5, "I": 0.0}
"""Correct, partially correct, incorrect."""

_MEANINGS = {"C": "correct", "P": "partially correct", "I": "incorrect"}
_PLACEHOLDERS = ("question", "answer", "criterion", "target", "transcript", "instructions")


class JudgeSpec(BaseModel):
    """A task's judge (``judge:`` in a suite), as episodes carry it.

    Attributes:
        model: The judge model, as ``--model`` takes it (``openai/gpt-4o-mini``).
        base_url: An OpenAI-compatible server's base URL (as ``--model-base-url``).
        backend: ``litellm`` or ``openai`` (as ``--model-backend``).
        api_key_env: The variable holding the judge's API key (its name, never its
            value); ``None``: the provider's usual variable.
        rubric: The prompt template (see the module docstring).
        criterion: What a good answer does; ``None``: the env's reference answer.
        instructions: Replaces ``{instructions}``; ``None``: ask for ``GRADE: X``
            with the letters of ``grades``.
        grades: Each grade the judge may give, and its score.
        grade_pattern: A regex whose first group is the grade, searched in the reply
            (case-insensitive, one line at a time: ``^`` and ``$`` match at lines).
        generation: The judge's generation settings, over ``temperature: 0`` (a
            judge that samples would grade one answer two ways).
        max_attempts: Replies asked for in all while none holds a grade.
        max_retries, timeout_s, max_connections: The judge's call policy, as a model's.
    """

    model: str
    base_url: str | None = None
    backend: str = "litellm"
    api_key_env: str | None = None
    rubric: str = DEFAULT_RUBRIC
    criterion: str | None = None
    instructions: str | None = None
    grades: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_GRADES))
    grade_pattern: str = r"GRADE\s*:\s*\**\s*([A-Za-z]+)"
    generation: dict[str, Any] = Field(default_factory=dict)
    max_attempts: int = Field(default=2, ge=1)
    max_retries: int | None = Field(default=None, ge=0)
    timeout_s: float | None = Field(default=None, gt=0)
    max_connections: int | None = Field(default=None, ge=1)

    @field_validator("rubric")
    @classmethod
    def _check_rubric(cls, value: str) -> str:
        if "{answer}" not in value and "{transcript}" not in value:
            raise ValueError("a rubric must show the judge {answer} or {transcript}")
        return value

    @field_validator("grade_pattern")
    @classmethod
    def _check_pattern(cls, value: str) -> str:
        try:
            groups = re.compile(value).groups
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if groups < 1:
            raise ValueError("the pattern needs a group: the grade, e.g. GRADE: ([CPI])")
        return value

    @model_validator(mode="after")
    def _check_grades(self) -> JudgeSpec:
        if not self.grades:
            raise ValueError("grades: give at least one grade and its score")
        return self

    @property
    def full_score(self) -> float:
        """The best score a grade gives: a verdict with it is a success."""
        return max(self.grades.values())

    def connection(self) -> tuple[Any, ...]:
        """What sets one judge model apart from another (not the rubric or grades)."""
        return (
            self.model,
            self.base_url,
            self.backend,
            self.api_key_env,
            self.max_retries,
            self.timeout_s,
            self.max_connections,
        )

    def default_instructions(self) -> str:
        """``{instructions}`` when the spec gives none: how to write the grade."""
        letters = ", ".join(f"{g} ({_MEANINGS[g]})" if g in _MEANINGS else g for g in self.grades)
        return (
            "First explain your reasoning step by step, then end your reply with a line "
            f"'GRADE: X' (without quotes), where X is one of: {letters}."
        )

    def render(self, question: str, answer: str, target: str | None, transcript: str = "") -> str:
        """The prompt the judge is sent."""
        values = {
            "question": question,
            "answer": answer,
            "target": target or "",
            "criterion": self.criterion or target or "",
            "transcript": transcript,
            "instructions": self.instructions or self.default_instructions(),
        }
        # One pass over the placeholders, so that an answer holding "{target}" stays text.
        pattern = "|".join(re.escape("{" + name + "}") for name in _PLACEHOLDERS)
        return re.sub(pattern, lambda m: values[m.group(0)[1:-1]], self.rubric)

    def parse(self, reply: str) -> str | None:
        """The grade in ``reply`` (spelt as in ``grades``), or ``None``; the last match
        naming a known grade counts (a judge may quote the format before deciding)."""
        known = {g.casefold(): g for g in self.grades}
        found = None
        for match in re.finditer(self.grade_pattern, reply, re.IGNORECASE | re.MULTILINE):
            grade = known.get((match.group(1) or "").strip().casefold())
            if grade is not None:
                found = grade
        return found


class JudgeVerdict(BaseModel):
    """What the judge made of one episode (``EpisodeRecord.judge``).

    Attributes:
        model: The judge model.
        grade: The grade parsed from its reply; ``None`` when none was found, the
            call failed, or there was no answer to judge.
        score: The grade's score; ``None`` when the judge failed (``error``).
        explanation: The judge's reply (its last, when it was asked again).
        target: The reference answer the judge was shown (kept for re-judging).
        attempts: Replies asked for.
        usage: The judge's tokens and cost, apart from the judged model's.
        latency_s: Time spent in judge calls.
        retries: Retried judge calls.
        error: Why there is no score.
        cached: Every judge reply came from the response cache.
    """

    model: str
    grade: str | None = None
    score: float | None = None
    explanation: str = ""
    target: str | None = None
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    retries: int = 0
    error: str | None = None
    cached: bool = False


NO_ANSWER = "the episode gave no answer to judge"
"""The explanation of a verdict given without a judge call: scored as the worst grade."""


async def judge_answer(
    model: Model,
    spec: JudgeSpec,
    *,
    question: str,
    answer: str,
    target: str | None = None,
    transcript: str = "",
) -> JudgeVerdict:
    """Ask ``model`` to grade ``answer`` as ``spec`` says.

    An empty answer is not sent: it gets the worst grade's score (the model answered
    nothing). A reply without a grade is followed by a request for one, up to
    ``spec.max_attempts`` replies in all.

    Returns:
        The verdict; on a failed call or no grade, one with ``error`` and no score.
    """
    verdict = JudgeVerdict(model=spec.model, target=target)
    if not answer.strip() and "{transcript}" not in spec.rubric:
        verdict.score, verdict.explanation = min(spec.grades.values()), NO_ANSWER
        return verdict
    config = GenerateConfig(**_settings({"temperature": 0.0, **spec.generation}))
    messages: list[Message] = [
        {"role": "user", "content": spec.render(question, answer, target, transcript)}
    ]
    how = spec.instructions or spec.default_instructions()
    started, cached = time.monotonic(), True
    try:
        for attempt in range(1, spec.max_attempts + 1):
            output = await model.generate(messages, None, config)
            verdict.attempts, verdict.explanation = attempt, output.text
            verdict.usage = verdict.usage + output.usage
            verdict.retries += output.retries
            cached = cached and bool(getattr(output, "cached", False))  # response cache
            grade = spec.parse(output.text)
            if grade is not None:
                verdict.grade, verdict.score = grade, spec.grades[grade]
                break
            messages += [
                {"role": "assistant", "content": output.text},
                {"role": "user", "content": f"Your reply held no grade. {how}"},
            ]
        else:
            verdict.error = f"no grade in the judge's reply after {spec.max_attempts} attempt(s)"
    except ModelCallError as exc:
        verdict.retries += exc.retries
        verdict.error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    verdict.latency_s = time.monotonic() - started
    verdict.cached = cached and verdict.attempts > 0 and verdict.error is None
    return verdict


def _settings(generation: dict[str, Any]) -> dict[str, Any]:
    """``generation`` as :class:`GenerateConfig` fields; unknown keys go to ``extra``."""
    known = {k: v for k, v in generation.items() if k in GenerateConfig.model_fields}
    extra = {k: v for k, v in generation.items() if k not in GenerateConfig.model_fields}
    if extra:
        known["extra"] = {**known.get("extra", {}), **extra}
    return known
