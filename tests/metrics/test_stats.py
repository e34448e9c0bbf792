from __future__ import annotations

import math
import subprocess
import sys
from itertools import combinations, pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gem_eval.metrics import (
    bootstrap_ci,
    mcnemar,
    mean_se,
    paired_bootstrap_diff,
    pass_at_k,
    pass_hat_k,
)


def _brute_force(n: int, c: int, k: int) -> tuple[float, float]:
    """Share of the k-subsets of n attempts (the first c correct) with any / all correct."""
    subsets = list(combinations(range(n), k))
    any_ok = sum(any(i < c for i in s) for s in subsets)
    all_ok = sum(all(i < c for i in s) for s in subsets)
    return any_ok / len(subsets), all_ok / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_match_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            at, hat = _brute_force(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(at)
            assert pass_hat_k(n, c, k) == pytest.approx(hat)


def test_pass_at_1_is_the_success_rate() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_hat_k(10, 3, 1) == pytest.approx(0.3)


@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_grows_and_pass_hat_k_shrinks_with_k(n_c: tuple[int, int]) -> None:
    n, c = n_c
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= x <= 1.0 for x in at + hat)
    assert all(x <= y + 1e-12 for x, y in pairwise(at))
    assert all(x + 1e-12 >= y for x, y in pairwise(hat))
    assert all(h <= a + 1e-12 for h, a in zip(hat, at))


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_at_k_rejects_out_of_range_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_mean_se() -> None:
    mean, se = mean_se([1, 2, 3, 4])
    assert mean == 2.5
    assert se == pytest.approx(math.sqrt(5 / 3) / 2)
    assert all(math.isnan(x) for x in mean_se([]))
    assert mean_se([0.5])[0] == 0.5 and math.isnan(mean_se([0.5])[1])


def test_bootstrap_ci_edge_cases_and_determinism() -> None:
    assert all(math.isnan(x) for x in bootstrap_ci([]))
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    values = np.random.default_rng(1).random(50)
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    low, high = bootstrap_ci(values)
    assert low < values.mean() < high
    with pytest.raises(ValueError):
        bootstrap_ci(values, level=1.0)


@pytest.mark.parametrize("kind", ["bernoulli", "normal"])  # multinomial and index resampling
def test_bootstrap_ci_covers_the_true_mean_most_of_the_time(kind: str) -> None:
    rng = np.random.default_rng(42)
    true_mean, trials, covered = 0.3, 300, 0
    for seed in range(trials):
        if kind == "bernoulli":
            x = (rng.random(100) < true_mean).astype(float)
        else:
            x = rng.normal(true_mean, 1.0, 100)
        low, high = bootstrap_ci(x, level=0.95, n_resamples=1000, seed=seed)
        covered += low <= true_mean <= high
    assert 0.90 <= covered / trials <= 0.99


def test_paired_bootstrap_diff() -> None:
    rng = np.random.default_rng(0)
    a = rng.random(200)
    b = a - 0.1 + rng.normal(0, 0.01, 200)
    diff = paired_bootstrap_diff(a, b)
    assert diff.mean == pytest.approx(-0.1, abs=0.005)
    assert diff.low < diff.mean < diff.high < 0
    same = paired_bootstrap_diff(a, a)
    assert (same.mean, same.low, same.high) == (0.0, 0.0, 0.0)
    assert all(math.isnan(x) for x in paired_bootstrap_diff([], []))
    with pytest.raises(ValueError):
        paired_bootstrap_diff([1, 0], [1])


def test_clustered_bootstrap_is_wider_when_epochs_repeat_a_sample() -> None:
    rng = np.random.default_rng(5)
    per_sample = rng.random(40) < 0.5  # each sample is solved in all of its epochs or none
    b = np.repeat(per_sample, 5).astype(float)
    a = np.zeros_like(b)
    plain = paired_bootstrap_diff(a, b)
    clustered = paired_bootstrap_diff(a, b, clusters=np.repeat(np.arange(40), 5))
    assert clustered.mean == plain.mean
    assert clustered.high - clustered.low > 1.8 * (plain.high - plain.low)


def _pairs(
    only_a: int, only_b: int, both: int = 10, neither: int = 10
) -> tuple[list[int], list[int]]:
    a = [1] * only_a + [0] * only_b + [1] * both + [0] * neither
    b = [0] * only_a + [1] * only_b + [1] * both + [0] * neither
    return a, b


def test_mcnemar_exact_textbook_value() -> None:
    # Wikipedia's McNemar example: discordant 6 vs 16. Exact: 2 * P(Bin(22, .5) <= 6).
    result = mcnemar(*_pairs(6, 16, both=59, neither=80))
    assert (result.only_a, result.only_b, result.method) == (6, 16, "exact")
    assert result.p_value == pytest.approx(2 * 110056 / 2**22)  # 0.05248
    assert mcnemar(*_pairs(6, 16), exact=False).p_value == pytest.approx(0.0550088, rel=1e-5)


def test_mcnemar_chi2_textbook_value() -> None:
    # Agresti, Categorical Data Analysis: presidential approval, discordant 150 vs 86.
    result = mcnemar(*_pairs(150, 86, both=794, neither=570))
    assert result.method == "chi2"
    assert result.statistic == pytest.approx(63**2 / 236)  # 16.82 with continuity correction
    assert result.p_value == pytest.approx(4.1146e-5, rel=1e-4)


def test_mcnemar_without_discordant_pairs_or_with_equal_counts() -> None:
    assert mcnemar([1, 0, 1], [1, 0, 1]).p_value == 1.0
    assert mcnemar(*_pairs(30, 30)).p_value == 1.0
    with pytest.raises(ValueError):
        mcnemar([1], [1, 0])


def test_scipy_is_imported_when_a_test_runs_not_before() -> None:
    code = (
        "import sys\n"
        "import gem_eval.metrics, gem_eval.cli.app\n"
        "print('before', 'scipy' in sys.modules)\n"
        "gem_eval.metrics.mcnemar([1, 0], [0, 1])\n"
        "print('after', 'scipy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["before", "False", "after", "True"]
