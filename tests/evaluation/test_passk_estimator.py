"""The unbiased pass@k estimator against brute force and exact rational arithmetic."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgrpo_verl.evaluation.passk import default_ks, mean_pass_at_k, pass_at_k, pass_at_k_curve


def brute_force_pass_at_k(outcomes: list[bool], k: int) -> Fraction:
    """Fraction of all k-subsets of the samples holding at least one correct sample."""
    subsets = list(itertools.combinations(range(len(outcomes)), k))
    hits = sum(any(outcomes[i] for i in subset) for subset in subsets)
    return Fraction(hits, len(subsets))


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.mark.parametrize("n", [1, 2, 5, 9, 12])
def test_matches_enumeration_of_all_k_subsets(n):
    rng = np.random.default_rng(n)
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        rng.shuffle(outcomes)
        for k in range(1, n + 1):
            expected = brute_force_pass_at_k(outcomes, k)
            assert pass_at_k(n, c, k) == pytest.approx(float(expected), rel=1e-12, abs=1e-15), (n, c, k)


def test_stable_at_n_4096_against_exact_rationals():
    n = 4096
    cases = [(c, k) for c in (1, 2, 17, 1000, 4000, 4095, 4096) for k in (1, 2, 64, 256, 1024, 4000, 4096)]
    c = np.array([case[0] for case in cases])
    k = np.array([case[1] for case in cases])
    got = pass_at_k(n, c, k)
    assert np.all(np.isfinite(got))
    for value, (ci, ki) in zip(got, cases, strict=True):
        expected = float(exact_pass_at_k(n, ci, ki))
        assert value == pytest.approx(expected, rel=1e-9, abs=1e-300), (ci, ki)
        # the naive formula overflows here: the log-space one must not
    assert math.comb(4096, 2048) > 10**308


def test_small_probabilities_keep_relative_precision():
    # 1 correct out of 4096, k = 1: exactly 1/4096; far below 1 - 1e-16 cancellation territory.
    assert pass_at_k(4096, 1, 1) == pytest.approx(1 / 4096, rel=1e-12)
    # near-1 complement: 1 - pass@k must be exact too
    n, c, k = 4096, 3000, 10
    expected_miss = Fraction(math.comb(n - c, k), math.comb(n, k))
    assert 1 - pass_at_k(n, c, k) == pytest.approx(float(expected_miss), rel=1e-6)


def test_vectorised_over_problems_with_ragged_n():
    n = np.array([4, 8, 1024, 16])
    c = np.array([0, 8, 3, 5])
    curve = pass_at_k_curve(n, c, [1, 4])
    assert curve.shape == (2, 4)
    for j in range(4):
        for i, k in enumerate([1, 4]):
            assert curve[i, j] == pytest.approx(float(exact_pass_at_k(int(n[j]), int(c[j]), k)), rel=1e-12)
    assert curve[:, 0].tolist() == [0.0, 0.0] and curve[:, 1].tolist() == [1.0, 1.0]


def test_mean_over_problems_and_k1_is_accuracy():
    n = np.full(3, 10)
    c = np.array([0, 5, 10])
    result = mean_pass_at_k(n, c, [1, 10])
    assert result[1] == pytest.approx(np.mean(c / n))
    assert result[10] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("n", "c", "k", "words"),
    [(4, 1, 5, "k must not exceed n"), (4, 5, 1, "0 <= c <= n"), (0, 0, 1, "n (samples"), (4, 1, 0, "k must be >= 1")],
)
def test_bad_counts_are_named(n, c, k, words):
    with pytest.raises(ValueError, match=re_escape(words)):
        pass_at_k(n, c, k)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_default_ks_is_the_paper_grid():
    assert default_ks(256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert default_ks(300) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert default_ks(1) == [1]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_property_exact_and_monotone_for_any_n_up_to_4096(data):
    n = data.draw(st.integers(1, 4096))
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    value = float(pass_at_k(n, c, k))
    assert value == pytest.approx(float(exact_pass_at_k(n, c, k)), rel=1e-9, abs=1e-12)
    if k < n:
        assert float(pass_at_k(n, c, k + 1)) >= value - 1e-15  # more tries never hurt
    if c < n:
        assert float(pass_at_k(n, c + 1, k)) >= value - 1e-15  # more correct samples never hurt
