"""The gate's rule: whether a paired comparison shows a significant drop beyond a tolerance.

One rule for the whole run (:func:`gem_eval.metrics.compare.gate`) and for each of its
tasks (:mod:`gem_eval.metrics.task_verdicts`), so that a task fails on the evidence a run
would fail on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gem_eval.metrics.compare import Comparison


@dataclass(frozen=True)
class Drop:
    """The rule's answer on one comparison.

    Attributes:
        significant: The drop beyond ``max_drop`` is significant at ``alpha``.
        summary: The evidence in one line: means, difference, interval, pairs and,
            when it ran, McNemar's one-sided p-value.
        p_value: McNemar's one-sided p-value (``None`` when the scores are not binary).
    """

    significant: bool
    summary: str
    p_value: float | None = None


def judge_drop(cmp: Comparison, max_drop: float, alpha: float) -> Drop:
    """Whether ``cmp`` (made at level ``1 - 2*alpha``) shows a significant drop.

    Significant: the interval's upper bound ``U`` (the one-sided ``1 - alpha`` upper
    confidence bound of ``new - base``) is below ``-max_drop``; and, when every sample's
    score is binary, McNemar's test on samples agrees: more samples succeed only in base
    than only in new, with one-sided p-value (half the two-sided one) below ``alpha``. The
    exact test guards small samples, where a bootstrap interval is too narrow.
    """
    summary = (
        f"mean score {cmp.base_mean:.3f} -> {cmp.new_mean:.3f} (diff {cmp.diff:+.3f}, "
        f"{cmp.level:.0%} CI [{cmp.ci_low:+.3f}, {cmp.ci_high:+.3f}]) over {cmp.n_pairs} pairs"
        f" of {cmp.n_samples} samples"
    )
    beyond = cmp.ci_high < -max_drop
    test = cmp.mcnemar
    if test is None:
        return Drop(beyond, summary)
    one_sided = test.p_value / 2 if test.only_a > test.only_b else 1.0
    summary += (
        f"; McNemar one-sided p={one_sided:.3g} ({test.only_a} samples pass only in base, "
        f"{test.only_b} only in new)"
    )
    return Drop(beyond and one_sided < alpha, summary, one_sided)
