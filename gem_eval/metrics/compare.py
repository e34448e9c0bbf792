"""Paired comparison of two runs, and the CI gate built on it.

Both functions take per-episode frames (columns of :data:`gem_eval.records.EPISODE_COLUMNS`,
and ``scorer`` and ``agent`` as :meth:`gem_eval.store.Index.episodes_frame` adds them), one
run each. Runs graded by different scorers on the same task are not compared: a ``success``
and a ``return`` are different numbers. Runs played by different agents are, as runs of
different models are: that is agent A against agent B on the same samples. pandas is
imported inside the functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from gem_eval.metrics.coverage import Gap, count, find_gaps
from gem_eval.metrics.drop import judge_drop
from gem_eval.metrics.stats import McNemarResult, mcnemar, paired_bootstrap_diff
from gem_eval.metrics.summary import prepare
from gem_eval.records import DEFAULT_AGENT

if TYPE_CHECKING:
    import pandas as pd

PAIR_KEY = ("task_id", "sample", "epoch")

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPARABLE = 3
EXIT_CRASH = 4
"""Exit codes of ``gem-eval gate``, one per verdict: 0 no significant regression; 1 a
significant regression; 2 bad input (an unknown run, a bad option: the CLI's user-error
code); 3 the runs are not comparable (an unfinished run, different suite hashes or scorers,
a new run lacking part of the baseline, no common samples, too many infrastructure errors);
4 the gate itself failed (a bug, an unreadable index). A CI job can tell a regression from
a broken pipeline."""


@dataclass(frozen=True)
class RunCounts:
    """How many of a run's episodes were scored; the rest are infrastructure errors."""

    episodes: int
    scored: int

    @property
    def unscored(self) -> int:
        """Episodes lost to infra_error, env_error or cancellation."""
        return self.episodes - self.scored

    @property
    def infra_error_rate(self) -> float:
        """``unscored / episodes`` (1.0 for a run without episodes)."""
        return self.unscored / self.episodes if self.episodes else 1.0


@dataclass(frozen=True)
class TaskDiff:
    """The paired difference on one task."""

    task_id: str
    n_pairs: int
    base_mean: float
    new_mean: float
    diff: float


@dataclass(frozen=True)
class Comparison:
    """The paired comparison of a new run with a base run; ``diff`` is ``new - base``.

    Attributes:
        paired_on: The columns pairs are matched on.
        n_pairs: Episodes scored in both runs.
        n_samples: Samples with at least one such pair: the unit of the statistics.
        base_mean: Mean base score over the pairs; ``new_mean`` likewise.
        diff: ``new_mean - base_mean``.
        ci_low: The ``level`` paired bootstrap interval of ``diff`` (resampling samples,
            with all their epochs); ``ci_high`` likewise.
        binary: Every sample's score (its mean over the epochs paired in both runs) is 0
            or 1 in both runs: one epoch each, or epochs that all agree.
        mcnemar: McNemar's test on samples (``a`` = base, ``b`` = new) when ``binary``.
        per_task: The breakdown by task, in task order.
        only_base: Models of the base run that the new run lacks, when episodes pair on
            the model: they are not compared. ``only_new`` likewise.
        gaps: Tasks, or samples of a task, that one run played and the other did not
            (:mod:`gem_eval.metrics.coverage`): they are not compared either.
        base_agents: The agents that played the base run, sorted; ``new_agents``
            likewise (gem-eval's own loop for a frame without an ``agent`` column).
        agents_only_base: Agents of the base run that the new run lacks, when episodes
            pair on the agent (a run played by several): not compared.
            ``agents_only_new`` likewise.
    """

    paired_on: tuple[str, ...]
    n_pairs: int
    n_samples: int
    base_mean: float
    new_mean: float
    diff: float
    ci_low: float
    ci_high: float
    level: float
    binary: bool
    mcnemar: McNemarResult | None
    per_task: list[TaskDiff]
    base: RunCounts
    new: RunCounts
    only_base: tuple[str, ...] = ()
    only_new: tuple[str, ...] = ()
    gaps: tuple[Gap, ...] = ()
    base_agents: tuple[str, ...] = (DEFAULT_AGENT,)
    new_agents: tuple[str, ...] = (DEFAULT_AGENT,)
    agents_only_base: tuple[str, ...] = ()
    agents_only_new: tuple[str, ...] = ()

    @property
    def new_lacks_base(self) -> bool:
        """The new run lacks a model, an agent, a task or samples that the base run
        played."""
        lacks = self.only_base or self.agents_only_base
        return bool(lacks) or any(gap.side == "base" for gap in self.gaps)

    def agents_line(self) -> str | None:
        """Which agent played each run, in one line, when they differ or one is not
        gem-eval's own loop (``agents: base gem-eval, new terminus-2``)."""
        base, new = ", ".join(self.base_agents), ", ".join(self.new_agents)
        if not base or not new:  # a run without episodes
            return None
        if base != new:
            return f"agents: base {base}, new {new}"
        return None if base == DEFAULT_AGENT else f"agent: {base} in both runs"

    def lacking(self) -> str:
        """What the new run lacks of the base run, counted: ``1 model, 15 samples of 3
        tasks`` (empty when nothing)."""
        gaps = [gap for gap in self.gaps if gap.side == "base"]
        parts = [count(len(self.only_base), "model")] if self.only_base else []
        if self.agents_only_base:
            parts.append(count(len(self.agents_only_base), "agent"))
        if gaps:
            samples = count(sum(gap.samples for gap in gaps), "sample")
            parts.append(f"{samples} of {count(len({gap.task_id for gap in gaps}), 'task')}")
        return ", ".join(parts)

    def unpaired_models(self) -> list[str]:
        """One line per model, then per agent, of one run only, which the comparison
        leaves out."""
        return [
            f"{kind} {name} is in the {side} run only: not compared"
            for kind, base, new in (
                ("model", self.only_base, self.only_new),
                ("agent", self.agents_only_base, self.agents_only_new),
            )
            for side, names in (("base", base), ("new", new))
            for name in names
        ]

    def unpaired(self) -> list[str]:
        """One line per model, agent, task, or task's samples of one run only, which the
        comparison leaves out: the models and agents first."""
        return [*self.unpaired_models(), *(gap.line() for gap in self.gaps)]


@dataclass(frozen=True)
class GateVerdict:
    """The gate's answer: ``pass`` (exit 0), ``fail`` (exit 1) or ``incomparable`` (exit 3)."""

    status: Literal["pass", "fail", "incomparable"]
    exit_code: int
    reasons: list[str] = field(default_factory=list)
    comparison: Comparison | None = None


def compare_runs(
    base: pd.DataFrame,
    new: pd.DataFrame,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare two runs on the episodes both scored.

    Pairing: when each run has exactly one model (the usual case: a checkpoint against its
    baseline, whose model names differ), episodes pair on ``(task_id, sample, epoch)``.
    Otherwise they pair on ``(model, task_id, sample, epoch)``, so only models present in
    both runs are compared. The agent (the frames' ``agent`` column) is paired alike: runs
    of one agent each pair whatever their agents (agent A against agent B on the same
    samples); when a run was played by several, episodes pair on the agent too. A pair
    needs both episodes scored (infrastructure errors in either run drop the pair); tasks
    and samples that one run played and the other did not are named in ``gaps``. The
    statistics are per sample: the bootstrap resamples samples with all their pairs, and
    McNemar's test counts samples, not epochs.

    Raises:
        ValueError: A run holds two episodes with the same pairing key (frames of more
            than one run), or the runs grade a task with different scorers (see
            :func:`scorer_mismatch`).
    """
    mismatch = scorer_mismatch(base, new)
    if mismatch is not None:
        raise ValueError(mismatch)
    b, n = prepare(base), prepare(new)
    for run in (b, n):
        if "agent" not in run.columns:
            run["agent"] = DEFAULT_AGENT
    one_model_each = b["model"].nunique() == 1 and n["model"].nunique() == 1
    one_agent_each = b["agent"].nunique() == 1 and n["agent"].nunique() == 1
    on = [
        *([] if one_agent_each else ["agent"]),
        *([] if one_model_each else ["model"]),
        *PAIR_KEY,
    ]
    b_models, n_models = set(b["model"]), set(n["model"])
    only_base = () if one_model_each else tuple(sorted(b_models - n_models))
    only_new = () if one_model_each else tuple(sorted(n_models - b_models))
    b_agents, n_agents = _agents(b), _agents(n)
    agents_only_base = () if one_agent_each else tuple(a for a in b_agents if a not in n_agents)
    agents_only_new = () if one_agent_each else tuple(a for a in n_agents if a not in b_agents)
    b_scored, n_scored = b[b["scored"]], n[n["scored"]]
    for name, run in (("base", b_scored), ("new", n_scored)):
        if run.duplicated(on).any():
            raise ValueError(f"the {name} frame holds several scored episodes per {on}")
    pairs = b_scored[[*on, "score"]].merge(
        n_scored[[*on, "score"]], on=on, suffixes=("_base", "_new"), sort=True
    )
    a, c = pairs["score_base"].to_numpy(float), pairs["score_new"].to_numpy(float)
    sample_key = on[:-1]
    clusters = pairs.groupby(sample_key, sort=False).ngroup().to_numpy()
    diff = paired_bootstrap_diff(a, c, level, n_resamples, seed, clusters=clusters)
    # McNemar's test takes each pair for an independent trial. The epochs of one sample are
    # not independent (one item, one difficulty: a sample that fails tends to fail every
    # epoch), so counting epochs would multiply one sample's evidence by the epoch count and
    # overstate significance. Its unit is the sample, scored by its mean over the epochs
    # paired in both runs. That mean is binary when every epoch agrees (or there is one);
    # a fractional mean is not a success or a failure, and forcing it into one (majority
    # vote, any success) would test another quantity than the mean score the gate judges.
    # So McNemar runs only when every sample is binary in both runs; otherwise the clustered
    # paired bootstrap, which resamples whole samples, stands alone.
    per_sample = pairs.groupby(sample_key, sort=True)[["score_base", "score_new"]].mean()
    sa = per_sample["score_base"].to_numpy(float)
    sc = per_sample["score_new"].to_numpy(float)
    binary = bool(len(per_sample)) and all(set(x.tolist()) <= {0.0, 1.0} for x in (sa, sc))
    per_task = [
        TaskDiff(
            str(task),
            len(g),
            float(g["score_base"].mean()),
            float(g["score_new"].mean()),
            float((g["score_new"] - g["score_base"]).mean()),
        )
        for task, g in pairs.groupby("task_id", sort=True)
    ]
    return Comparison(
        paired_on=tuple(on),
        n_pairs=len(pairs),
        n_samples=len(per_sample),
        base_mean=float(a.mean()) if len(a) else math.nan,
        new_mean=float(c.mean()) if len(c) else math.nan,
        diff=diff.mean,
        ci_low=diff.low,
        ci_high=diff.high,
        level=level,
        binary=binary,
        mcnemar=mcnemar(sa > 0.5, sc > 0.5) if binary else None,
        per_task=per_task,
        base=RunCounts(len(b), int(b["scored"].sum())),
        new=RunCounts(len(n), int(n["scored"].sum())),
        only_base=only_base,
        only_new=only_new,
        gaps=tuple(find_gaps(b, n, on)),
        base_agents=b_agents,
        new_agents=n_agents,
        agents_only_base=agents_only_base,
        agents_only_new=agents_only_new,
    )


def _agents(run: pd.DataFrame) -> tuple[str, ...]:
    return tuple(sorted(map(str, run["agent"].dropna().unique())))


def scorer_mismatch(base: pd.DataFrame, new: pd.DataFrame) -> str | None:
    """Why the runs' scores do not compare: a task both runs played, graded by different
    scorers (one line naming each run's); ``None`` when they compare (or a frame has no
    ``scorer`` column)."""
    if "scorer" not in base.columns or "scorer" not in new.columns:
        return None
    b = base.dropna(subset=["scorer"]).groupby("task_id")["scorer"].agg(frozenset)
    n = new.dropna(subset=["scorer"]).groupby("task_id")["scorer"].agg(frozenset)
    differ = [task for task in b.index.intersection(n.index) if b[task] != n[task]]
    if not differ:
        return None
    base_labels = sorted(set().union(*(b[t] for t in differ)))
    new_labels = sorted(set().union(*(n[t] for t in differ)))
    return (
        f"the runs are scored differently: base by {', '.join(base_labels)}, new by "
        f"{', '.join(new_labels)}"
    )


def gate(
    base: pd.DataFrame,
    new: pd.DataFrame,
    max_drop: float = 0.02,
    alpha: float = 0.05,
    max_infra_error_rate: float = 0.1,
    same_suite_hash: bool = True,
    allow_subset: bool = False,
    n_resamples: int = 2000,
    seed: int = 0,
) -> GateVerdict:
    """Decide whether ``new`` regressed from ``base``.

    * ``incomparable`` (exit 3) when ``same_suite_hash`` is False (the caller compares the
      runs' suite hashes), when the runs grade a task with different scorers (then
      ``comparison`` is ``None``), when either run's share of unscored episodes (infra_error,
      env_error, cancelled) exceeds ``max_infra_error_rate``, when no episode was
      scored in both runs, or, unless ``allow_subset``, when the new run lacks a model,
      a task or samples that the baseline played: a gate compares like with like, and a
      run of half the suite would pass over the half it did not play.
    * ``fail`` (exit 1) when the drop beyond ``max_drop`` is significant at ``alpha``:
      the upper bound ``U`` of the two-sided ``1 - 2*alpha`` paired bootstrap interval of
      ``new - base`` (the one-sided ``1 - alpha`` upper confidence bound) is below
      ``-max_drop``; and, when every sample's score is binary, McNemar's test on samples
      agrees: more samples succeed only in base than only in new, with one-sided p-value
      (half the two-sided one) below ``alpha``. The exact test guards small samples,
      where a bootstrap interval is too narrow (:func:`~gem_eval.metrics.drop.judge_drop`,
      the rule each task of a gate report is judged by too).
    * ``pass`` (exit 0) otherwise.

    Which agent played each run is named after the verdict's reasons when they differ (or
    are not gem-eval's own loop), then models, agents, tasks and samples of one run only:
    the verdict is on the part both runs played (with ``allow_subset``, or when the new
    run has more than the baseline).

    Raises:
        ValueError: ``alpha`` is not in (0, 0.5) or ``max_drop`` not in [0, 1].
    """
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha}")
    if not 0 <= max_drop <= 1:
        raise ValueError(f"max_drop must lie in [0, 1], got {max_drop}")
    reasons: list[str] = []
    if not same_suite_hash:
        reasons.append("the runs' suite hashes differ: they did not evaluate the same suite")
    mismatch = scorer_mismatch(base, new)
    if mismatch is not None:
        return GateVerdict("incomparable", EXIT_INCOMPARABLE, [*reasons, mismatch])
    cmp = compare_runs(base, new, 1 - 2 * alpha, n_resamples, seed)
    for name, counts in (("base", cmp.base), ("new", cmp.new)):
        if counts.episodes == 0:
            reasons.append(f"the {name} run has no episodes")
        elif counts.infra_error_rate > max_infra_error_rate:
            reasons.append(
                f"{counts.unscored} of {counts.episodes} episodes of the {name} run were not "
                f"scored (infrastructure errors): {counts.infra_error_rate:.1%} > "
                f"{max_infra_error_rate:.1%}"
            )
    if cmp.n_pairs == 0 and cmp.base.episodes and cmp.new.episodes:
        reasons.append(f"no episode was scored in both runs (paired on {', '.join(cmp.paired_on)})")
    elif cmp.new_lacks_base and not allow_subset:
        reasons.append(
            f"the new run lacks {cmp.lacking()} that the baseline played: a gate compares "
            "like with like"
        )
    agents = [line] if (line := cmp.agents_line()) else []
    notes = [*agents, *cmp.unpaired()]
    if reasons:
        return GateVerdict("incomparable", EXIT_INCOMPARABLE, [*reasons, *notes], cmp)

    drop = judge_drop(cmp, max_drop, alpha)
    beyond, summary = drop.significant, drop.summary
    if beyond:
        verdict = f"significant drop beyond {max_drop:g} at alpha {alpha:g}: {summary}"
        return GateVerdict("fail", EXIT_REGRESSION, [verdict, *notes], cmp)
    verdict = f"no significant drop beyond {max_drop:g} at alpha {alpha:g}: {summary}"
    return GateVerdict("pass", EXIT_PASS, [verdict, *notes], cmp)
