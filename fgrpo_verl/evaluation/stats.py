"""Uncertainty for pass@k: bootstrap confidence intervals and the paired m-out-of-n subsampling test.

Both work on per-problem counts (``n`` samples, ``c`` correct) and never touch the samples themselves:

* :func:`bootstrap_ci` -- percentile interval of the benchmark mean of the unbiased pass@k when the
  problems are resampled with replacement (the problem set is the dominant source of variance).
* :func:`paired_subsample_test` -- compares two runs on the same problems. Each resample (i) draws
  ``m`` of the ``n`` samples of every problem without replacement, independently per run (the number
  of correct ones in such a draw is hypergeometric, so the draw is exact and vectorised), (ii) by
  default also resamples the problems with replacement, with the SAME problem indices for both runs
  (pairing), and (iii) records the difference of the benchmark means of the unbiased pass@k computed
  from the m-sample subsets. The paper evaluates with n = 1024 and m = 256.

Because the unbiased estimator is a U-statistic, its average over all m-subsets equals the n-sample
estimate, so the subsampling distribution is centred on the observed difference and needs no bias
correction. Its spread is that of an m-sample evaluation, wider than the n-sample one: the test is
conservative in the sampling noise (no sqrt(m/n) rescaling is applied). The two-sided p-value is
``2 * min(P(delta* <= 0), P(delta* >= 0))`` with the +1 correction of Monte-Carlo tests.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from fgrpo_verl.evaluation.passk import pass_at_k, pass_at_k_curve

# Resample rows processed at once: bounds memory to ~ this many x problems float64 values.
_CHUNK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class PairedComparison:
    """One k of a two-run comparison; ``delta = pass_a - pass_b``."""

    k: int
    pass_a: float
    pass_b: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float

    @property
    def mark(self) -> str:
        return significance_mark(self.p_value)

    def to_dict(self) -> dict:
        return asdict(self) | {"mark": self.mark}


def significance_mark(p_value: float) -> str:
    """``***`` p < 0.001, ``**`` p < 0.01, ``*`` p < 0.05, else empty."""
    for threshold, mark in ((0.001, "***"), (0.01, "**"), (0.05, "*")):
        if p_value < threshold:
            return mark
    return ""


def _problem_weights(rng: np.random.Generator, rows: int, problems: int) -> np.ndarray:
    # Multinomial counts == how often each problem is drawn in a with-replacement resample.
    return rng.multinomial(problems, np.full(problems, 1.0 / problems), size=rows).astype(np.float64)


def _chunks(total: int, problems: int) -> list[int]:
    step = max(1, _CHUNK_ELEMENTS // max(problems, 1))
    return [min(step, total - start) for start in range(0, total, step)]


def bootstrap_ci(
    n: np.ndarray,
    c: np.ndarray,
    ks: list[int],
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[int, Interval]:
    """Percentile bootstrap CI (over problems) of the mean unbiased pass@k, for each k in ``ks``."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    per_problem = pass_at_k_curve(n, c, ks)  # (K, P)
    problems = per_problem.shape[1]
    rng = np.random.default_rng(seed)
    means = []
    for rows in _chunks(n_resamples, problems):
        weights = _problem_weights(rng, rows, problems)  # (rows, P)
        means.append(per_problem @ weights.T / problems)  # (K, rows)
    boot = np.concatenate(means, axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha], axis=1)
    estimate = per_problem.mean(axis=1)
    return {int(k): Interval(float(estimate[i]), float(low[i]), float(high[i])) for i, k in enumerate(ks)}


def _check_paired(arrays: list[np.ndarray], ks: list[int], m: int) -> None:
    n_a, _, n_b, _ = arrays
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(f"runs must cover the same problems: shapes {[a.shape for a in arrays]}")
    if m < 1 or m > int(n_a.min()) or m > int(n_b.min()):
        raise ValueError(
            f"m={m} must be between 1 and the smallest samples-per-problem count "
            f"(run A: {int(n_a.min())}, run B: {int(n_b.min())}); lower --m or generate more samples"
        )
    too_big = [k for k in ks if k > m]
    if too_big:
        raise ValueError(f"k must not exceed m={m} in the subsampling test, got k={too_big}")


def subsample_differences(
    n_a: np.ndarray,
    c_a: np.ndarray,
    n_b: np.ndarray,
    c_b: np.ndarray,
    ks: list[int],
    m: int = 256,
    n_resamples: int = 1000,
    resample_problems: bool = True,
    seed: int | tuple[int, ...] = 0,
) -> dict[int, np.ndarray]:
    """The resampled differences of mean pass@k (A - B), ``n_resamples`` per k (see module doc)."""
    arrays = [np.atleast_1d(np.asarray(x, dtype=np.int64)) for x in (n_a, c_a, n_b, c_b)]
    _check_paired(arrays, ks, m)
    n_a, c_a, n_b, c_b = arrays
    problems = n_a.size
    rng = np.random.default_rng(seed)
    # pass@k of an m-subset depends only on its correct count: one lookup table per k.
    tables = [pass_at_k(m, np.arange(m + 1), k) for k in ks]
    deltas: dict[int, list[np.ndarray]] = {int(k): [] for k in ks}
    for rows in _chunks(n_resamples, problems):
        sub_a = rng.hypergeometric(c_a, n_a - c_a, m, size=(rows, problems))
        sub_b = rng.hypergeometric(c_b, n_b - c_b, m, size=(rows, problems))
        weights = _problem_weights(rng, rows, problems) if resample_problems else np.ones((rows, problems))
        for k, table in zip(ks, tables, strict=True):
            deltas[int(k)].append(((table[sub_a] - table[sub_b]) * weights).sum(axis=1) / problems)
    return {k: np.concatenate(parts) for k, parts in deltas.items()}


def summarise_difference(
    k: int, pass_a: float, pass_b: float, distribution: np.ndarray, confidence: float = 0.95
) -> PairedComparison:
    """Percentile CI and two-sided Monte-Carlo p-value of a resampled difference distribution."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(distribution, [alpha, 1 - alpha])
    below = (1 + np.count_nonzero(distribution <= 0)) / (distribution.size + 1)
    above = (1 + np.count_nonzero(distribution >= 0)) / (distribution.size + 1)
    return PairedComparison(
        k=int(k),
        pass_a=float(pass_a),
        pass_b=float(pass_b),
        delta=float(pass_a - pass_b),
        ci_low=float(low),
        ci_high=float(high),
        p_value=float(min(1.0, 2 * min(below, above))),
    )


def paired_subsample_test(
    n_a: np.ndarray,
    c_a: np.ndarray,
    n_b: np.ndarray,
    c_b: np.ndarray,
    ks: list[int],
    m: int = 256,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    resample_problems: bool = True,
    seed: int | tuple[int, ...] = 0,
) -> list[PairedComparison]:
    """Paired m-out-of-n subsampling test of pass@k(A) - pass@k(B) on the same, aligned problems.

    Args:
        n_a, c_a, n_b, c_b: per-problem sample and correct counts of runs A and B, same problem order.
        ks: budgets to test; each must satisfy k <= m.
        m: samples drawn per problem and resample (paper: 256 of n = 1024); m <= every n.
        resample_problems: also resample problems (paired); False tests sampling noise only, i.e.
            whether A beats B on exactly this problem set.

    Raises:
        ValueError: misaligned inputs, m larger than some problem's n, or k > m.
    """
    distributions = subsample_differences(n_a, c_a, n_b, c_b, ks, m, n_resamples, resample_problems, seed)
    curve_a = pass_at_k_curve(n_a, c_a, ks).mean(axis=1)
    curve_b = pass_at_k_curve(n_b, c_b, ks).mean(axis=1)
    return [
        summarise_difference(k, curve_a[i], curve_b[i], distributions[int(k)], confidence) for i, k in enumerate(ks)
    ]


def macro_average_test(
    benchmarks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    ks: list[int],
    m: int = 256,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    resample_problems: bool = True,
    seed: int = 0,
) -> list[PairedComparison]:
    """The same test for the unweighted mean over benchmarks (the paper's "average" column).

    Benchmarks are resampled independently (own seed stream each); the i-th resample of the
    average is the mean of the benchmarks' i-th resampled differences.
    """
    if not benchmarks:
        raise ValueError("macro_average_test needs at least one benchmark")
    sums = {int(k): np.zeros(n_resamples) for k in ks}
    pass_a = np.zeros(len(ks))
    pass_b = np.zeros(len(ks))
    for index, (n_a, c_a, n_b, c_b) in enumerate(benchmarks):
        dists = subsample_differences(n_a, c_a, n_b, c_b, ks, m, n_resamples, resample_problems, (seed, index))
        for k in ks:
            sums[int(k)] += dists[int(k)]
        pass_a += pass_at_k_curve(n_a, c_a, ks).mean(axis=1)
        pass_b += pass_at_k_curve(n_b, c_b, ks).mean(axis=1)
    count = len(benchmarks)
    return [
        summarise_difference(k, pass_a[i] / count, pass_b[i] / count, sums[int(k)] / count, confidence)
        for i, k in enumerate(ks)
    ]
