"""``QAEnv`` (``qa:QA-v0``): a question with short gold answers, scored by EM and token F1.

::

    env = make("qa:QA-v0", question="Who designed the Verran Lighthouse?",
               answer=["Odile Marchetti", "Marchetti"])
    env.reset(seed=0)
    env.step("It was <answer>Odile Marchetti</answer>.")
    # reward 1.0; info: em 1.0, f1 1.0, gold "Odile Marchetti", success True

Where the answer is read (:func:`extract_answer`):

* ``<answer>...</answer>`` (case-insensitive): the last complete pair. When there is none,
  a trailing ``<answer>`` left open is read to the end of the text, so that a
  ``stop: ["</answer>"]`` generation setting (which strips the closing tag) still works.
* ``\\boxed{...}``: the last complete box (nested braces), with ``\\text{...}``-style
  wrappers removed.
* When both appear, the one written last counts (a box inside the tags is the tags' answer).
* Fallback: nothing else. Text with neither form, or an empty answer, is a format error
  (``format_reward``), not graded as a whole: token F1 of a paragraph against a name
  would reward rambling.

Rewards: ``reward="em"`` (default) gives 1.0 for a normalised exact match and 0.0
otherwise; ``reward="f1"`` gives the token F1 instead. Either way ``success`` means an
exact match, and ``info`` carries ``em``, ``f1``, the best ``gold`` and the ``normalized``
answer. Gold answers may be one string or a list of aliases; the score is the best over
them (see :mod:`gem_eval.envs.qa.metrics`).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from gem_eval.boxed import last_boxed
from gem_eval.envs.qa.metrics import best_match, gold_answers, normalize_answer
from gem_eval.envs.question import Grade, QuestionEnv

Reward = Literal["em", "f1"]
REWARDS: tuple[Reward, ...] = ("em", "f1")

_OPEN = re.compile(r"<answer\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"</answer\s*>", re.IGNORECASE)
_LATEX_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|textsf|texttt|mathrm|mathbf|mathit|mbox|operatorname)"
    r"\s*\{([^{}]*)\}"
)


def extract_answer(text: str) -> str | None:
    """The final answer written in ``text``, or ``None`` (see the module docstring)."""
    tagged = _last_tagged(text)
    if tagged is None:
        boxed = last_boxed(text)
        return None if boxed is None else _clean(_unwrap_latex(boxed))
    content, end = tagged
    # A box after the tags was written later; a box inside them is their content.
    after, inside = last_boxed(text[end:]), last_boxed(content)
    if after is not None or inside is not None:
        return _clean(_unwrap_latex(after if after is not None else str(inside)))
    return _clean(content)


def _last_tagged(text: str) -> tuple[str, int] | None:
    """The content of the last ``<answer>`` pair and the index just past it.

    An open tag with no closing tag after it counts only when no complete pair exists.
    """
    found: tuple[str, int] | None = None
    position = 0
    while (opening := _OPEN.search(text, position)) is not None:
        closing = _CLOSE.search(text, opening.end())
        if closing is None:
            return found or (text[opening.end() :], len(text))
        found = (text[opening.end() : closing.start()], closing.end())
        position = closing.end()
    return found


def _unwrap_latex(text: str) -> str:
    """``\\text{Odile Marchetti}`` -> ``Odile Marchetti``; ``~`` (a LaTeX space) -> space."""
    while True:
        unwrapped = _LATEX_WRAPPER.sub(r"\1", text)
        if unwrapped == text:
            return text.replace("~", " ")
        text = unwrapped


def _clean(answer: str) -> str | None:
    answer = answer.strip()
    return answer or None


class QAEnv(QuestionEnv):
    """A question answered in a few words, graded against one or more gold answers.

    Args:
        question: The question; ``None`` to draw one from ``dataset`` at reset.
        answer: The gold answer: a string, or a list of accepted aliases.
        reward: ``em`` (1.0 / 0.0 for an exact match) or ``f1`` (token F1).
        max_turns: Answers allowed.
        format_reward: Reward for an action with no extractable answer.
        prompt: Template of the first observation; ``{question}`` is replaced.
        dataset: A file of rows to draw questions from when ``question`` is not given.
        question_field: The rows' question column.
        answer_field: The rows' gold answer column (a string or a list).

    Raises:
        ValueError: An unknown ``reward``, or a missing or empty gold answer (in a
            dataset: any row's).
    """

    answer_instruction: ClassVar[str] = (
        "Answer with a short phrase (a name, a number or a date) "
        "inside <answer></answer> tags, e.g. <answer>Paris</answer>."
    )
    format_hint: ClassVar[str] = (
        "No final answer found: write it inside <answer></answer> tags, "
        "e.g. <answer>Paris</answer>."
    )

    def __init__(
        self,
        question: str | None = None,
        answer: Any = None,
        *,
        reward: Reward = "em",
        max_turns: int = 1,
        format_reward: float = -0.1,
        prompt: str | None = None,
        dataset: str | None = None,
        question_field: str = "question",
        answer_field: str = "answer",
    ) -> None:
        if reward not in REWARDS:
            raise ValueError(f"reward must be 'em' or 'f1', not {reward!r}")
        super().__init__(
            question,
            answer,
            max_turns=max_turns,
            format_reward=format_reward,
            prompt=prompt,
            dataset=dataset,
            question_field=question_field,
            answer_field=answer_field,
        )
        self.reward: Reward = reward
        self.golds: list[str] = []
        if self.fixed is not None:
            self.golds = gold_answers(answer)
        for index, row in enumerate(self.rows):  # a bad row fails now, not mid-run
            if answer_field not in row:
                raise ValueError(f"{dataset}: row {index} has no {answer_field!r} column")
            try:
                gold_answers(row[answer_field])
            except ValueError as exc:
                raise ValueError(f"{dataset}: row {index}: {exc}") from None

    def load_row(self, row: dict[str, Any]) -> None:
        super().load_row(row)
        self.golds = gold_answers(self.answer)

    def extract(self, action: str) -> str | None:
        return extract_answer(action)

    def grade(self, extracted: str) -> Grade:
        match = best_match(extracted, self.golds)
        detail = {
            "em": match.em,
            "f1": match.f1,
            "gold": match.gold,
            "normalized": normalize_answer(extracted),
        }
        score = match.em if self.reward == "em" else match.f1
        return Grade(correct=match.em == 1.0, score=score, detail=detail)
