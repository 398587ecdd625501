"""Lemma 3.1 of F-GRPO: how likely a group is to learn from mixed rewards yet miss a rare solution.

A prompt has total correct mass mu under the policy; a "rare" correct region holds mass tau
(0 < tau < mu), the rest of the correct mass mu - tau is "common".  For a group of N i.i.d.
rollouts, the event B = "the group is active (has both correct and wrong rollouts) and contains
nothing from the rare region" has probability

    Pr(B) = (1 - tau)^N - (mu - tau)^N - (1 - mu)^N

(no rare draw, minus the all-common-correct and the all-wrong groups, which carry no signal).
It is 0 at N = 1, rises, peaks, and only then decays: a larger group is not automatically safer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from fgrpo_verl.sim.validation import require_number


def _show(x: np.ndarray) -> str:
    """Scalar as a plain number, arrays as a short list (error messages)."""
    if x.ndim == 0:
        return repr(x.item())
    flat = x.ravel().tolist()
    return repr(flat) if len(flat) <= 6 else f"[{', '.join(map(repr, flat[:6]))}, ...]"


def _check_mass(mu: np.ndarray, tau: np.ndarray) -> None:
    if not np.all(np.isfinite(mu)) or np.any((mu <= 0.0) | (mu >= 1.0)):
        raise ValueError(f"mu (total correct probability mass) must be in the open interval (0, 1), got {_show(mu)}")
    if not np.all(np.isfinite(tau)) or np.any(tau <= 0.0):
        raise ValueError(f"tau (mass of the rare correct region) must be > 0, got {_show(tau)}")
    if np.any(tau >= mu):
        raise ValueError(
            f"tau must be smaller than mu (the rare region is part of the correct mass; rho = tau / mu "
            f"in (0, 1)), got tau={_show(tau)}, mu={_show(mu)}"
        )


def _check_group_size(n: np.ndarray) -> None:
    if n.dtype.kind not in "iuf" or not np.all(np.isfinite(n)) or np.any(n < 1) or np.any(n != np.floor(n)):
        raise ValueError(f"n (group size N) must be an integer >= 1, got {_show(n)}")


def _pow(base: np.ndarray, n: np.ndarray) -> np.ndarray:
    """base ** n via exp(n log base): exact enough for N up to 1e9 and base close to 1."""
    with np.errstate(divide="ignore"):
        return np.exp(n * np.log(base))


def tail_miss_probability(n: ArrayLike, mu: ArrayLike, tau: ArrayLike) -> np.ndarray | float:
    """Pr(B) of Lemma 3.1 for group size ``n``, correct mass ``mu`` and rare mass ``tau``.

    Scalars or arrays (NumPy broadcasting); returns a float for all-scalar input.
    Raises ``ValueError`` naming the argument for mu outside (0, 1), tau outside (0, mu), n < 1.
    """
    n_arr = np.asarray(n, dtype=np.float64) if not isinstance(n, bool) else np.asarray(n)
    mu_arr = np.asarray(mu, dtype=np.float64)
    tau_arr = np.asarray(tau, dtype=np.float64)
    _check_group_size(n_arr)
    _check_mass(mu_arr, tau_arr)
    # (1 - tau)^N via log1p keeps full precision when tau ~ 1e-5 and N ~ 1e5.
    no_rare = np.exp(n_arr * np.log1p(-tau_arr))
    prob = no_rare - _pow(mu_arr - tau_arr, n_arr) - _pow(1.0 - mu_arr, n_arr)
    prob = np.clip(prob, 0.0, 1.0)  # rounding can leave -1e-17 at N = 1
    return float(prob) if prob.ndim == 0 else prob


def rare_mass(mu: float, tau: float | None = None, rho: float | None = None) -> float:
    """tau from either ``tau`` or ``rho = tau / mu`` (exactly one must be given)."""
    if (tau is None) == (rho is None):
        raise ValueError("give exactly one of tau (rare-region mass) or rho (= tau / mu, in (0, 1))")
    if rho is not None:
        rho = require_number("rho", rho)
        if not 0.0 < rho < 1.0:
            raise ValueError(f"rho (= tau / mu) must be in the open interval (0, 1), got {rho!r}")
        return rho * require_number("mu", mu)
    return require_number("tau", tau)


@dataclass(frozen=True)
class TailMissPeak:
    group_size: int  # N maximising Pr(B)
    probability: float  # Pr(B) at that N


def _search_limit(tau: float) -> int:
    # Beyond this N, (1 - tau)^N < 1e-12: Pr(B) is negligible and decreasing.
    return max(16, math.ceil(28.0 / -math.log1p(-tau)))


def tail_miss_peak(mu: float, tau: float) -> TailMissPeak:
    """The integer N with the largest Pr(B): a geometric grid, then an exact scan around its best point."""
    _check_mass(np.asarray(mu, dtype=np.float64), np.asarray(tau, dtype=np.float64))
    limit = _search_limit(tau)
    grid = np.unique(np.round(np.geomspace(1, limit, 4000)).astype(np.int64))
    best = int(np.argmax(tail_miss_probability(grid, mu, tau)))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    local = np.arange(lo, hi + 1)
    values = tail_miss_probability(local, mu, tau)
    i = int(np.argmax(values))
    return TailMissPeak(int(local[i]), float(values[i]))


def group_size_below(mu: float, tau: float, level: float) -> int:
    """Smallest N past the peak with Pr(B) < ``level``: the group size that makes the miss unlikely."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    peak = tail_miss_peak(mu, tau)
    lo, hi = peak.group_size, peak.group_size
    while tail_miss_probability(hi, mu, tau) >= level:  # doubling: Pr(B) decays past the peak
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # bisection on the decreasing side
        mid = (lo + hi) // 2
        if tail_miss_probability(mid, mu, tau) >= level:
            lo = mid
        else:
            hi = mid
    return int(hi)


def active_probability(n: ArrayLike, mu: ArrayLike) -> np.ndarray | float:
    """Pr(group has mixed rewards) = 1 - mu^N - (1 - mu)^N: the groups GRPO learns from at all."""
    n_arr, mu_arr = np.asarray(n, dtype=np.float64), np.asarray(mu, dtype=np.float64)
    _check_group_size(n_arr)
    if np.any((mu_arr <= 0.0) | (mu_arr >= 1.0)):
        raise ValueError(f"mu must be in the open interval (0, 1), got {_show(mu_arr)}")
    out = 1.0 - _pow(mu_arr, n_arr) - _pow(1.0 - mu_arr, n_arr)
    return float(out) if out.ndim == 0 else out


def plain_reading(n: int, mu: float, tau: float) -> str:
    """A few sentences a practitioner can act on, for their N and typical mu."""
    prob = tail_miss_probability(n, mu, tau)
    active = active_probability(n, mu)
    peak = tail_miss_peak(mu, tau)
    safe = group_size_below(mu, tau, 0.1)
    share = prob / active if active > 0 else 0.0
    where = (
        "before the peak: raising N makes the miss MORE likely until N = {p}"
        if n < peak.group_size
        else "at the peak"
        if n == peak.group_size
        else "past the peak: raising N makes the miss less likely"
    ).format(p=peak.group_size)
    return (
        f"With N = {n} rollouts on prompts the policy solves {mu:.0%} of the time, and a rare correct "
        f"solution holding {tau:.3g} of the probability (rho = {tau / mu:.3g} of the correct mass):\n"
        f"  - {prob:.1%} of groups update the policy (mixed rewards) without ever sampling the rare solution "
        f"({share:.1%} of the groups that update at all). Those updates raise the common correct answers and "
        f"can push the rare one down.\n"
        f"  - N = {n} is {where}; the worst N is {peak.group_size} (Pr = {peak.probability:.3f}).\n"
        f"  - Pr(B) falls below 10% only at N >= {safe}. Below that, a focal weight (gamma 0.5-1) damps "
        f"exactly these high-success updates instead of paying for a larger group."
    )
