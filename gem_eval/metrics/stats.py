"""The statistics behind leaderboards and gates: means, bootstrap intervals, pass@k, McNemar.

Pure functions over plain numbers or arrays. numpy and scipy are imported inside the functions
that need them, so importing this module (and ``gem-eval --help``) stays cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

EXACT_MCNEMAR_BELOW = 25
"""McNemar uses the exact binomial test when there are fewer discordant pairs than this."""

_CHUNK = 1 << 22  # resampled values held in memory at once (~32 MB of float64)


class CI(NamedTuple):
    """A confidence interval."""

    low: float
    high: float


class PairedDiff(NamedTuple):
    """The mean of ``b - a`` over pairs, with its bootstrap confidence interval."""

    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on paired binary outcomes.

    Attributes:
        only_a: Pairs where ``a`` succeeded and ``b`` failed.
        only_b: Pairs where ``b`` succeeded and ``a`` failed.
        statistic: The continuity-corrected chi-square statistic (also reported for the
            exact test, for reference).
        p_value: The two-sided p-value.
        method: ``"exact"`` (binomial test on the discordant pairs) or ``"chi2"``.
    """

    only_a: int
    only_b: int
    statistic: float
    p_value: float
    method: Literal["exact", "chi2"]


def mean_se(values: ArrayLike) -> tuple[float, float]:
    """The mean and its standard error.

    ``se = s / sqrt(n)`` with ``s`` the sample standard deviation (``ddof=1``).

    Returns:
        ``(mean, se)``; ``(nan, nan)`` for no values, and ``se`` is nan for one value.
    """
    import numpy as np

    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        return math.nan, math.nan
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
    return float(x.mean()), se


def bootstrap_ci(
    values: ArrayLike, level: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> CI:
    """Percentile bootstrap confidence interval of the mean.

    Draws ``n_resamples`` resamples of size ``n`` with replacement, takes each one's mean
    ``m*_r``, and returns the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
    ``m*_r``. Deterministic for a given ``seed``.

    Returns:
        The interval; ``(nan, nan)`` for no values.
    """
    import numpy as np

    x = np.asarray(values, dtype=float).ravel()
    return _bootstrap_ratio_ci(x, np.ones_like(x), level, n_resamples, seed)


def paired_bootstrap_diff(
    a: ArrayLike,
    b: ArrayLike,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    clusters: ArrayLike | None = None,
) -> PairedDiff:
    """Mean paired difference ``mean(b_i - a_i)`` with a percentile bootstrap interval.

    Pairs are resampled together (``d_i = b_i - a_i`` is bootstrapped), which keeps the
    correlation between the two measurements of one item. With ``clusters`` (one label per
    pair, e.g. the sample id when each sample ran several epochs) whole clusters are
    resampled and each resample's statistic is ``sum(d in drawn clusters) / count``: repeated
    measurements of one item then do not narrow the interval as if they were independent.

    Returns:
        ``(mean, low, high)``; all nan when there are no pairs.

    Raises:
        ValueError: ``a``, ``b`` (and ``clusters``) differ in length.
    """
    import numpy as np

    x = np.asarray(a, dtype=float).ravel()
    y = np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"a and b differ in length: {x.size} != {y.size}")
    d = y - x
    if d.size == 0:
        return PairedDiff(math.nan, math.nan, math.nan)
    if clusters is None:
        sums, counts = d, np.ones_like(d)
    else:
        labels = np.asarray(clusters).ravel()
        if labels.shape != d.shape:
            raise ValueError(f"clusters has {labels.size} labels for {d.size} pairs")
        _, inverse = np.unique(labels, return_inverse=True)
        sums = np.bincount(inverse, weights=d)
        counts = np.bincount(inverse).astype(float)
    low, high = _bootstrap_ratio_ci(sums, counts, level, n_resamples, seed)
    return PairedDiff(float(d.mean()), low, high)


def _bootstrap_ratio_ci(sums: Any, counts: Any, level: float, n_resamples: int, seed: int) -> CI:
    """Bootstrap the ratio ``sum(sums) / sum(counts)`` by resampling units with replacement.

    When the units take few distinct ``(sum, count)`` values (binary scores), the resample
    counts of each distinct value are drawn from one multinomial: the same distribution as
    resampling units, at a fraction of the cost.
    """
    import numpy as np

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n = sums.size
    if n == 0:
        return CI(math.nan, math.nan)
    rng = np.random.default_rng(seed)
    units = np.stack([sums, counts], axis=1)
    distinct, freq = np.unique(units, axis=0, return_counts=True)
    if len(distinct) * 8 <= n:
        weights = rng.multinomial(n, freq / n, size=n_resamples)
        stats = (weights @ distinct[:, 0]) / (weights @ distinct[:, 1])
    else:
        rows = max(1, _CHUNK // n)
        parts = []
        for start in range(0, n_resamples, rows):
            idx = rng.integers(0, n, size=(min(rows, n_resamples - start), n))
            parts.append(sums[idx].sum(axis=1) / counts[idx].sum(axis=1))
        stats = np.concatenate(parts)
    tail = (1 - level) / 2
    low, high = np.quantile(stats, [tail, 1 - tail])
    return CI(float(low), float(high))


def _check_nck(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator (Chen et al., 2021).

    ``pass@k = 1 - C(n - c, k) / C(n, k)``: the probability that at least one of ``k``
    attempts drawn without replacement from ``n`` attempts, ``c`` of them correct, is correct.

    Args:
        n: Attempts made.
        c: Correct attempts.
        k: Attempts allowed (``1 <= k <= n``).

    Raises:
        ValueError: The arguments are out of range.
    """
    _check_nck(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased pass^k estimator (tau-bench): every one of ``k`` attempts succeeds.

    ``pass^k = C(c, k) / C(n, k)``: the probability that ``k`` attempts drawn without
    replacement from ``n`` attempts, ``c`` of them correct, are all correct.

    Raises:
        ValueError: The arguments are out of range.
    """
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def mcnemar(a: ArrayLike, b: ArrayLike, exact: bool | None = None) -> McNemarResult:
    """McNemar's test that paired binary outcomes ``a`` and ``b`` succeed equally often.

    Only discordant pairs carry information: ``n10`` (a only) and ``n01`` (b only). Under
    the null each discordant pair is a fair coin.

    * exact: ``p = min(1, 2 * P(X <= min(n10, n01)))`` with ``X ~ Binomial(n10 + n01, 1/2)``.
    * chi2: ``stat = max(|n10 - n01| - 1, 0)**2 / (n10 + n01)`` (Edwards' continuity
      correction), ``p = P(chi2_1 >= stat) = erfc(sqrt(stat / 2))``.

    Args:
        a: Outcomes of the first system (truthy = success).
        b: Outcomes of the second system, paired with ``a``.
        exact: Force the exact (True) or the chi-square (False) test. By default the exact
            test is used below :data:`EXACT_MCNEMAR_BELOW` discordant pairs.

    Raises:
        ValueError: ``a`` and ``b`` differ in length.
    """
    import numpy as np

    x = np.asarray(a).astype(bool).ravel()
    y = np.asarray(b).astype(bool).ravel()
    if x.shape != y.shape:
        raise ValueError(f"a and b differ in length: {x.size} != {y.size}")
    only_a, only_b = int((x & ~y).sum()), int((~x & y).sum())
    n = only_a + only_b
    stat = max(abs(only_a - only_b) - 1, 0) ** 2 / n if n else 0.0
    use_exact = n < EXACT_MCNEMAR_BELOW if exact is None else exact
    if n == 0:
        p = 1.0
    elif use_exact:
        p = min(1.0, 2.0 * _binom_cdf_half(min(only_a, only_b), n))
    else:
        p = _chi2_1_sf(stat)
    return McNemarResult(only_a, only_b, stat, p, "exact" if use_exact else "chi2")


def _binom_cdf_half(k: int, n: int) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, 1/2)``."""
    from scipy.stats import binom

    return float(binom.cdf(k, n, 0.5))


def _chi2_1_sf(stat: float) -> float:
    """``P(chi2 with 1 degree of freedom >= stat)``."""
    from scipy.stats import chi2

    return float(chi2.sf(stat, 1))
