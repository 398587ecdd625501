"""Lemma 3.1 against the paper's reference values, a Monte Carlo estimate, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fgrpo_verl.sim import active_probability, group_size_below, tail_miss_peak, tail_miss_probability
from fgrpo_verl.sim.tail_miss import plain_reading, rare_mass


@pytest.mark.parametrize(
    ("mu", "rho", "peak_n", "peak_prob"),
    [(0.5, 0.1, 5, 0.724), (0.2, 0.01, 21, 0.950)],
)
def test_peak_matches_paper(mu: float, rho: float, peak_n: int, peak_prob: float) -> None:
    peak = tail_miss_peak(mu, rare_mass(mu, rho=rho))
    assert peak.group_size == peak_n
    assert peak.probability == pytest.approx(peak_prob, abs=5e-4)
    # It is a true integer maximum: both neighbours are lower.
    tau = rho * mu
    assert tail_miss_probability(peak_n - 1, mu, tau) < peak.probability
    assert tail_miss_probability(peak_n + 1, mu, tau) < peak.probability


def test_simulation_reference_values() -> None:
    got = tail_miss_probability(np.array([8, 256, 4096, 131072]), 0.64, 6.3e-5)
    np.testing.assert_allclose(got[:3], [0.971, 0.984, 0.773], atol=5e-4)
    assert got[3] == pytest.approx(2.6e-4, rel=0.02)


def test_array_and_scalar_forms_agree_and_broadcast() -> None:
    n = np.arange(1, 50)
    arr = tail_miss_probability(n, 0.5, 0.05)
    assert arr.shape == n.shape
    assert isinstance(tail_miss_probability(7, 0.5, 0.05), float)
    assert arr[6] == tail_miss_probability(7, 0.5, 0.05)
    assert arr[0] == 0.0  # a group of one is never mixed
    grid = tail_miss_probability(8, np.array([[0.3], [0.6]]), np.array([0.01, 0.02, 0.05]))
    assert grid.shape == (2, 3)


def test_non_monotonic_in_n() -> None:
    p = tail_miss_probability(np.array([1, 5, 1000]), 0.5, 0.05)
    assert p[0] < p[1] and p[2] < p[1]


def test_monte_carlo_agrees() -> None:
    """Draw groups from a 3-outcome categorical (rare correct / common correct / wrong) and count event B."""
    rng = np.random.default_rng(0)
    mu, tau, trials = 0.5, 0.05, 200_000
    for n in (2, 5, 12):
        draws = rng.choice(3, size=(trials, n), p=[tau, mu - tau, 1 - mu])  # 0 rare, 1 common, 2 wrong
        has_rare = (draws == 0).any(axis=1)
        has_correct = (draws <= 1).any(axis=1)
        has_wrong = (draws == 2).any(axis=1)
        estimate = np.mean(~has_rare & has_correct & has_wrong)
        exact = tail_miss_probability(n, mu, tau)
        assert estimate == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / trials) + 1e-4)


def test_group_size_below_is_first_n_under_level() -> None:
    n = group_size_below(0.64, 6.3e-5, 0.1)
    assert tail_miss_probability(n, 0.64, 6.3e-5) < 0.1 <= tail_miss_probability(n - 1, 0.64, 6.3e-5)


def test_plain_reading_mentions_the_numbers() -> None:
    text = plain_reading(8, 0.64, 6.3e-5)
    assert "97.1%" in text and "N = 20" in text


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n": 8, "mu": 0.0, "tau": 0.01}, "mu"),
        ({"n": 8, "mu": 1.0, "tau": 0.01}, "mu"),
        ({"n": 8, "mu": 0.5, "tau": 0.5}, "tau must be smaller than mu"),
        ({"n": 8, "mu": 0.5, "tau": -0.1}, "tau"),
        ({"n": 0, "mu": 0.5, "tau": 0.1}, "n (group size N)"),
        ({"n": 2.5, "mu": 0.5, "tau": 0.1}, "n (group size N)"),
        ({"n": np.array([4, 0]), "mu": 0.5, "tau": 0.1}, "n (group size N)"),
    ],
)
def test_bad_input_names_the_argument(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("(", r"\(").replace(")", r"\)")):
        tail_miss_probability(**kwargs)


def test_rho_validation() -> None:
    assert rare_mass(0.5, rho=0.1) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="rho"):
        rare_mass(0.5, rho=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        rare_mass(0.5)


@given(
    n=st.integers(min_value=1, max_value=10**6),
    mu=st.floats(min_value=1e-4, max_value=1 - 1e-4),
    rho=st.floats(min_value=1e-6, max_value=1 - 1e-6),
)
def test_probability_is_bounded_by_its_parts(n: int, mu: float, rho: float) -> None:
    """Pr(B) is a probability, never above Pr(active) nor Pr(no rare draw) (B is inside both)."""
    tau = rho * mu
    prob = tail_miss_probability(n, mu, tau)
    assert 0.0 <= prob <= 1.0
    assert prob <= active_probability(n, mu) + 1e-12
    assert prob <= (1.0 - tau) ** n * (1 + 1e-9)  # float pow of (1 - tau) carries ~n * 1e-16 error
