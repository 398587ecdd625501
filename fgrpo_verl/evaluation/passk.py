"""The unbiased pass@k estimator (Chen et al. 2021, Eq. 1), in log space and vectorised over problems.

For a problem with ``n`` samples of which ``c`` are correct,

    pass@k = 1 - C(n - c, k) / C(n, k)

is the probability that a random k-subset of the n samples holds at least one correct answer; averaged
over problems it is the unbiased estimate of pass@k that the F-GRPO paper reports (n = 1024, k <= 256).
The binomials overflow float64 from n ~ 1030 on, so the ratio is formed in log space from Chen et
al.'s product form and the result taken as ``-expm1(log_ratio)``, which keeps precision both near 0
and near 1. Verified against exact rational arithmetic for n up to 4096 (tests/evaluation).
"""

from __future__ import annotations

import math

import numpy as np

ArrayLike = int | np.ndarray | list[int]

# Per-k prefix sums S_k[J] = sum_{j=k+1}^{J} log(1 - k/j), so that for n - c >= k
#   log C(n-c, k) / C(n, k) = sum_{j=n-c+1}^{n} log(1 - k/j) = S_k[n] - S_k[n-c]   (Chen et al.'s product form).
# Kept in long double (80-bit on x86-64 Linux): the difference of two prefix sums then stays exact to
# ~1e-16 even where pass@k itself is ~1e-4, which a float64 lgamma difference is not (~1e-8 relative).
_prefix_cache: dict[int, np.ndarray] = {}


def _log_ratio_prefix(k: int, max_n: int) -> np.ndarray:
    table = _prefix_cache.get(k)
    if table is None or table.size <= max_n:
        size = max(max_n + 1, 4097, 0 if table is None else 2 * table.size)
        j = np.arange(size, dtype=np.longdouble)
        terms = np.zeros(size, dtype=np.longdouble)
        terms[k + 1 :] = np.log1p(-np.longdouble(k) / j[k + 1 :])
        table = np.cumsum(terms)
        _prefix_cache[k] = table
    return table


def default_ks(max_k: int) -> list[int]:
    """The paper's grid 1, 2, 4, ..., up to and including ``max_k`` (powers of two)."""
    if max_k < 1:
        raise ValueError(f"max_k must be >= 1, got {max_k}")
    return [2**i for i in range(int(math.log2(max_k)) + 1)]


def pass_at_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> np.ndarray:
    """Unbiased pass@k per problem; ``n``, ``c`` and ``k`` broadcast against each other.

    Args:
        n: samples per problem (>= 1).
        c: correct samples per problem (0 <= c <= n).
        k: budget (1 <= k <= n).

    Returns:
        float64 array of the broadcast shape with 1 - C(n-c, k) / C(n, k).

    Raises:
        ValueError: counts out of range; the message gives the first offending entry.
    """
    n_arr, c_arr, k_arr = np.broadcast_arrays(
        np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64), np.asarray(k, dtype=np.int64)
    )
    _check_counts(n_arr, c_arr, k_arr)
    wrong = n_arr - c_arr
    # C(n-c, k) = 0 when n - c < k: every k-subset holds a correct sample.
    always = wrong < k_arr
    log_ratio = np.zeros(n_arr.shape, dtype=np.longdouble)
    # One prefix table per distinct k (the grid has few); a scalar k needs no grouping pass.
    k_values = [int(np.asarray(k))] if np.ndim(k) == 0 else np.unique(k_arr).tolist()
    for k_value in k_values:
        rows = ~always if len(k_values) == 1 else (k_arr == k_value) & ~always
        if rows.any():
            prefix = _log_ratio_prefix(k_value, int(n_arr[rows].max()))
            log_ratio[rows] = prefix[n_arr[rows]] - prefix[wrong[rows]]
    result = (-np.expm1(log_ratio)).astype(np.float64)
    result = np.where(always, 1.0, result)
    return np.where(c_arr == 0, 0.0, result)


def _check_counts(n: np.ndarray, c: np.ndarray, k: np.ndarray) -> None:
    for bad, what in (
        (n < 1, "n (samples per problem) must be >= 1"),
        ((c < 0) | (c > n), "c (correct samples) must satisfy 0 <= c <= n"),
        (k < 1, "k must be >= 1"),
        (k > n, "k must not exceed n (the problem has fewer samples than k)"),
    ):
        if bad.any():
            i = np.unravel_index(int(np.argmax(bad)), bad.shape)
            raise ValueError(f"{what}: got n={int(n[i])}, c={int(c[i])}, k={int(k[i])} at index {tuple(map(int, i))}")


def pass_at_k_curve(n: ArrayLike, c: ArrayLike, ks: list[int]) -> np.ndarray:
    """Per-problem pass@k for every k in ``ks``: shape (len(ks), problems)."""
    n_arr = np.atleast_1d(np.asarray(n, dtype=np.int64))
    c_arr = np.atleast_1d(np.asarray(c, dtype=np.int64))
    k_col = np.asarray(ks, dtype=np.int64)[:, None]
    return pass_at_k(n_arr[None, :], c_arr[None, :], k_col)


def mean_pass_at_k(n: ArrayLike, c: ArrayLike, ks: list[int]) -> dict[int, float]:
    """Benchmark-level pass@k: the mean over problems of the per-problem unbiased estimate."""
    curve = pass_at_k_curve(n, c, ks)
    return {int(k): float(v) for k, v in zip(ks, curve.mean(axis=1), strict=True)}
