"""``MathEnv`` (``math:Math-v0``): a math question, its answer checked for equivalence.

::

    env = make("math:Math-v0", question="Simplify 6/8.", answer="\\\\frac{3}{4}")
    env.reset(seed=0)
    env.step("6/8 = \\\\boxed{0.75}")
    # reward 1.0; info: grader "math_verify", normalized_gold "\\\\frac{3}{4}", ...

The answer is read from the last ``\\boxed{}`` (or ``\\fbox{}``), else from
``<answer>...</answer>`` or a closing "the answer is X" line (``boxed_only=True`` reads
boxes only): see :mod:`gem_eval.envs.math.extract`. It is graded by
:mod:`gem_eval.envs.math.grader`: a string fast path, then ``math-verify`` in a worker
process with a timeout. ``info`` carries ``grader`` (``exact``, ``math_verify``,
``timeout`` or ``error``) and the ``normalized_gold`` / ``normalized_pred`` answers.

Gold answers (``answer=`` or a dataset's answer column) may be a string, a number, a
worked solution ending in ``\\boxed{}`` or ``#### X``, or a list of accepted answers.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gem_eval.envs.math.extract import extract_answer, gold_answer
from gem_eval.envs.math.grader import DEFAULT_TIMEOUT_S, grade_answer
from gem_eval.envs.question import Grade, QuestionEnv


class MathEnv(QuestionEnv):
    """A math question answered in ``\\boxed{}`` (see the module docstring).

    Args:
        question: The question; ``None`` to draw one from ``dataset`` at reset.
        answer: The gold answer, or a list of accepted answers.
        boxed_only: Read the answer from ``\\boxed{}``/``\\fbox{}`` only (no fallbacks).
        grader_timeout_s: Seconds ``math-verify`` may spend on one answer; past it the
            answer is graded wrong (``grader: timeout``).
        **kwargs: :class:`~gem_eval.envs.question.QuestionEnv`'s settings (``max_turns``,
            ``format_reward``, ``prompt``, ``dataset``, ...).
    """

    blocking: ClassVar[bool] = True  # grading waits on a worker process

    def __init__(
        self,
        question: str | None = None,
        answer: Any = None,
        *,
        boxed_only: bool = False,
        grader_timeout_s: float = DEFAULT_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        if grader_timeout_s <= 0:
            raise ValueError("grader_timeout_s must be positive")
        super().__init__(question, answer, **kwargs)
        self.boxed_only, self.grader_timeout_s = boxed_only, grader_timeout_s

    def extract(self, action: str) -> str | None:
        return extract_answer(action, boxed_only=self.boxed_only)

    def grade(self, extracted: str) -> Grade:
        golds = self.answer if isinstance(self.answer, (list, tuple)) else [self.answer]
        best: Grade | None = None
        for gold in filter(None, map(gold_answer, golds)):
            grade = grade_answer(gold, extracted, timeout_s=self.grader_timeout_s)
            if grade.correct:
                return grade
            best = best or grade
        if best is None:
            return Grade(False, 0.0, {"grader": "error", "grader_error": "no gold answer"})
        return best
