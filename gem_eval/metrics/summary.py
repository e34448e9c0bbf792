"""Leaderboard rows: per model (and task or category) scores, intervals, pass@k and errors.

The input is a per-episode frame with the columns of
:data:`gem_eval.records.EPISODE_COLUMNS`, and, from the index, each episode's ``suite``,
``scorer`` and ``agent`` (:data:`gem_eval.store.index.FRAME_COLUMNS`). A row never spans two
runs, two scorers or two agents. pandas is imported inside the functions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gem_eval.metrics.stats import bootstrap_ci, mean_se, pass_at_k, pass_hat_k
from gem_eval.outcomes import ERROR_OUTCOMES, SCORED_OUTCOMES

if TYPE_CHECKING:
    import pandas as pd

MISSING_GROUP = "(none)"
"""Shown for an episode with no value in a grouping column (a task without a category)."""

SAMPLE_KEY = ("run_id", "model", "task_id", "sample")
"""What identifies one sample: its epochs are its attempts for pass@k."""

APART = ("agent", "suite", "run_id", "scorer")
"""What one leaderboard row never pools, besides its ``by`` columns (those of them an
episode frame has): a row is an agent + model pair, as a public leaderboard lists
Terminus-2 + gpt-5 apart from Codex CLI + gpt-5; a sample played in two runs is two
measurements of one sample, not two samples (pooled, they would shrink the SE and CI as if
independent); and a ``success`` and a ``return`` are different numbers. The suite goes
with the run; it shows which suite a row is of."""


def prepare(frame: pd.DataFrame) -> pd.DataFrame:
    """A normalised copy of an episode frame: a ``scored`` column, ``success`` as bool and
    ``score`` as float, where a scored episode without a score counts as 0.

    Raises:
        ValueError: A column the statistics need is missing.
    """
    needed = {"model", "task_id", "sample", "outcome", "score", "success"}
    missing = sorted(needed - set(frame.columns))
    if missing:
        raise ValueError(f"episode frame lacks column(s): {', '.join(missing)}")
    df: pd.DataFrame = frame.copy()
    for column, default in (("run_id", ""), ("category", None), ("epoch", 0), ("turns", 0)):
        if column not in df.columns:
            df[column] = default
    for column in ("input_tokens", "output_tokens", "cost_usd"):
        df[column] = df[column].astype(float) if column in df.columns else float("nan")
    df["scored"] = df["outcome"].isin(SCORED_OUTCOMES)
    df["success"] = df["success"].fillna(False).astype(bool) & df["scored"]
    score = df["score"].astype(float)
    df["score"] = score.where(~df["scored"] | score.notna(), 0.0)
    return df


def default_k_values(max_attempts: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``max_attempts``, and ``max_attempts`` itself; none for 1."""
    if max_attempts < 2:
        return ()
    ks = {max_attempts}
    k = 1
    while k < max_attempts:
        ks.add(k)
        k *= 2
    return tuple(sorted(ks))


def summarize(
    frame: pd.DataFrame,
    by: Sequence[str] = ("model",),
    k_values: Sequence[int] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per group of ``by`` (e.g. ``("model",)``, ``("model", "task_id")``,
    ``("model", "category")``) of each agent, run and scorer: the groups are ``by`` and
    :data:`APART` (``agent``, ``suite``, ``run_id``, ``scorer``, those the frame has), in
    this order but for the agent, which follows the first of ``by`` (``model, agent``).

    The unit of analysis is the sample (``run_id, model, task_id, sample``): its score is the
    mean over its scored epochs, and ``score``, ``accuracy``, ``se`` and the bootstrap
    interval are taken over samples, so that repeated epochs of one sample do not shrink the
    interval as if they were independent. With one epoch this is the per-episode mean.

    Columns, after the ``by`` columns:

    * ``n``: scored episodes (see :data:`gem_eval.outcomes.SCORED_OUTCOMES`); ``samples``.
    * ``score``, ``se``, ``ci_low``, ``ci_high``: mean score, standard error, and the
      ``level`` percentile-bootstrap interval. ``accuracy``: mean success.
    * ``pass@k``, ``pass^k`` for each ``k`` of ``k_values`` (default: 1, 2, 4, ... up to the
      most scored epochs of any sample, none with one epoch): each sample's unbiased
      estimate from its ``n`` scored epochs, ``c`` of them successful, averaged over the
      samples with ``n >= k`` (nan when none has).
    * ``turns``: mean over scored episodes. ``tokens`` and ``cost_usd``: totals over all
      episodes, since failed ones were paid for too (``cost_usd`` nan when never known).
    * one column per outcome of :data:`gem_eval.outcomes.ERROR_OUTCOMES`: episode
      counts. Unscored outcomes are left out of every statistic above; scored ones
      (``model_error``) count as failures there and are counted here as well.
    * ``gave_up``: unscored episodes that ``--resume`` no longer replays (their
      ``--max-attempts`` ran out); also counted in their outcome's column.

    Rows are sorted by suite, by the ``by`` columns after the first, then by score, best
    first, then by model, agent, run and scorer.
    """
    import pandas as pd

    df = prepare(frame)
    apart = [c for c in APART if c in df.columns]
    keys = list(dict.fromkeys([*by[:1], *(c for c in apart if c == "agent"), *by[1:], *apart]))
    unknown = [k for k in keys if k not in df.columns]
    if unknown:
        raise ValueError(f"cannot group by unknown column(s): {', '.join(unknown)}")
    for key in keys:
        if df[key].isna().any():
            df[key] = df[key].astype(object).where(df[key].notna(), MISSING_GROUP)

    groups = df.groupby(keys, sort=True)
    df["tokens"] = df["input_tokens"].fillna(0) + df["output_tokens"].fillna(0)
    out = pd.DataFrame(
        {
            "tokens": groups["tokens"].sum().astype("int64"),
            "cost_usd": groups["cost_usd"].sum(min_count=1),
        }
    )
    errors = pd.crosstab([df[k] for k in keys], df["outcome"])
    out = out.join(errors.reindex(index=out.index, columns=list(ERROR_OUTCOMES), fill_value=0))
    gave_up = df["gave_up"] if "gave_up" in df.columns else pd.Series(False, index=df.index)
    out["gave_up"] = gave_up.fillna(0).astype(bool).groupby([df[k] for k in keys]).sum()
    out["gave_up"] = out["gave_up"].fillna(0).astype("int64")

    scored = df[df["scored"]]
    sample_cols = list(dict.fromkeys([*keys, *SAMPLE_KEY]))
    samples = (
        scored.groupby(sample_cols, sort=False)
        .agg(score=("score", "mean"), n=("score", "size"), c=("success", "sum"))
        .reset_index()
    )
    max_attempts = int(samples["n"].max()) if len(samples) else 0
    ks = default_k_values(max_attempts) if k_values is None else tuple(k_values)
    rows = {
        name: _group_stats(group, ks, level, n_resamples, seed)
        for name, group in samples.groupby(keys, sort=False)
    }
    index = (
        pd.MultiIndex.from_tuples(list(rows), names=keys)
        if len(keys) > 1
        else pd.Index([name[0] for name in rows], name=keys[0])
    )
    stats = pd.DataFrame(list(rows.values()), index=index, columns=_stat_columns(ks))
    turns = scored.groupby(keys)["turns"].mean().rename("turns")
    out = stats.join(turns).reindex(out.index).join(out)
    out["n"] = out["n"].fillna(0).astype("int64")
    out["samples"] = out["samples"].fillna(0).astype("int64")
    out = out.reset_index()
    order = dict.fromkeys(["suite", *by[1:]], True) | {"score": False}
    order |= {k: True for k in [by[0], *keys] if k not in order}
    order = {k: ascending for k, ascending in order.items() if k in out.columns}
    board: pd.DataFrame = out.sort_values(
        list(order), ascending=list(order.values()), na_position="last"
    ).reset_index(drop=True)
    return board


def _stat_columns(ks: Sequence[int]) -> list[str]:
    return [
        "n",
        "samples",
        "score",
        "se",
        "ci_low",
        "ci_high",
        "accuracy",
        *[f"pass@{k}" for k in ks],
        *[f"pass^{k}" for k in ks],
    ]


def _group_stats(
    samples: Any, ks: Sequence[int], level: float, n_resamples: int, seed: int
) -> list[float]:
    """The statistics of one group, from its per-sample ``score``, ``n`` and ``c``."""
    score, se = mean_se(samples["score"])
    low, high = bootstrap_ci(samples["score"], level, n_resamples, seed)
    accuracy = float((samples["c"] / samples["n"]).mean())
    n_c = list(zip(samples["n"].astype(int), samples["c"].astype(int)))
    at = [_mean_estimate(pass_at_k, n_c, k) for k in ks]
    hat = [_mean_estimate(pass_hat_k, n_c, k) for k in ks]
    total = float(samples["n"].sum())
    return [total, float(len(samples)), score, se, low, high, accuracy, *at, *hat]


def _mean_estimate(estimator: Any, n_c: list[tuple[int, int]], k: int) -> float:
    """Average ``estimator(n, c, k)`` over samples with ``n >= k``, once per distinct pair."""
    counts = Counter((n, c) for n, c in n_c if n >= k)
    total = sum(counts.values())
    if not total:
        return float("nan")
    return sum(m * float(estimator(n, c, k)) for (n, c), m in counts.items()) / total
