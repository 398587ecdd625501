"""Bootstrap intervals and the paired m-out-of-n subsampling test."""

from __future__ import annotations

import numpy as np
import pytest

from fgrpo_verl.evaluation.passk import pass_at_k
from fgrpo_verl.evaluation.stats import bootstrap_ci, macro_average_test, paired_subsample_test, significance_mark


def simulate_counts(rates: np.ndarray, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).binomial(n, rates)


def test_bootstrap_ci_brackets_estimate_and_shrinks_with_more_problems():
    rates = np.random.default_rng(0).uniform(0, 0.3, size=400)
    n = np.full(400, 64)
    c = simulate_counts(rates, 64, 1)
    wide = bootstrap_ci(n[:40], c[:40], [1, 8, 64], n_resamples=1000, seed=3)
    narrow = bootstrap_ci(n, c, [1, 8, 64], n_resamples=1000, seed=3)
    for k in (1, 8, 64):
        assert narrow[k].low <= narrow[k].estimate <= narrow[k].high
        assert (narrow[k].high - narrow[k].low) < (wide[k].high - wide[k].low)
    # mean pass@1 of the counts is the plain accuracy
    assert narrow[1].estimate == pytest.approx(c.sum() / n.sum())


def test_bootstrap_ci_coverage_on_known_population():
    """95% intervals cover the population mean pass@1 in roughly 95% of repeated experiments."""
    population = np.random.default_rng(5).uniform(0, 1, size=20000)
    truth = population.mean()
    covered = 0
    trials = 60
    for t in range(trials):
        rng = np.random.default_rng(100 + t)
        rates = rng.choice(population, size=200)
        c = rng.binomial(16, rates)
        ci = bootstrap_ci(np.full(200, 16), c, [1], n_resamples=400, seed=t)[1]
        covered += ci.low <= truth <= ci.high
    assert 0.85 <= covered / trials <= 1.0


def test_subsample_test_detects_a_real_difference_and_not_a_null_one():
    rng = np.random.default_rng(7)
    rates = rng.beta(0.3, 2.0, size=150)
    n = np.full(150, 512)
    c_base = rng.binomial(512, rates)
    c_same = rng.binomial(512, rates)  # an independent run of the same policy
    c_better = rng.binomial(512, np.minimum(1, rates * 1.6 + 0.01))
    ks = [1, 16, 128]
    better = paired_subsample_test(n, c_better, n, c_base, ks, m=128, n_resamples=400, seed=1)
    same = paired_subsample_test(n, c_same, n, c_base, ks, m=128, n_resamples=400, seed=1)
    assert all(r.delta > 0 and r.p_value < 0.01 and r.mark for r in better)
    assert all(r.ci_low <= r.delta <= r.ci_high for r in better + same)
    assert all(r.p_value > 0.05 for r in same)


def test_subsample_distribution_is_centred_on_the_observed_difference():
    """U-statistic property: the average of m-subset estimates equals the n-sample estimate."""
    n = np.full(30, 64)
    c_a = np.arange(30) * 2
    c_b = np.zeros(30, dtype=int) + 3
    (result,) = paired_subsample_test(n, c_a, n, c_b, [4], m=16, n_resamples=4000, resample_problems=False, seed=0)
    assert (result.ci_low + result.ci_high) / 2 == pytest.approx(result.delta, abs=0.01)
    assert result.delta == pytest.approx(float((pass_at_k(64, c_a, 4) - pass_at_k(64, c_b, 4)).mean()))


def test_subsample_test_rejects_bad_arguments():
    n = np.full(3, 8)
    with pytest.raises(ValueError, match="m=16"):
        paired_subsample_test(n, n // 2, n, n // 2, [1], m=16)
    with pytest.raises(ValueError, match=r"k must not exceed m=4"):
        paired_subsample_test(n, n // 2, n, n // 2, [8], m=4)
    with pytest.raises(ValueError, match="same problems"):
        paired_subsample_test(n, n // 2, n[:2], n[:2] // 2, [1], m=4)


def test_significance_marks():
    assert [significance_mark(p) for p in (0.0005, 0.005, 0.02, 0.2)] == ["***", "**", "*", ""]


def test_macro_average_of_one_benchmark_is_that_benchmark_and_of_two_is_their_mean():
    rng = np.random.default_rng(3)
    n = np.full(40, 32)
    first = (n, rng.binomial(32, 0.4, size=40), n, rng.binomial(32, 0.2, size=40))
    second = (n, rng.binomial(32, 0.3, size=40), n, rng.binomial(32, 0.3, size=40))
    alone = paired_subsample_test(*first, [1, 8], m=16, n_resamples=300, seed=(5, 0))
    (avg1, avg8) = macro_average_test([first], [1, 8], m=16, n_resamples=300, seed=5)
    assert avg1 == alone[0] and avg8 == alone[1]
    both = macro_average_test([first, second], [1, 8], m=16, n_resamples=300, seed=5)
    other = paired_subsample_test(*second, [1, 8], m=16, n_resamples=300, seed=(5, 1))
    for i in range(2):
        assert both[i].delta == pytest.approx((alone[i].delta + other[i].delta) / 2)
        assert both[i].ci_low <= both[i].delta <= both[i].ci_high
