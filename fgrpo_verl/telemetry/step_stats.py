"""Per-step focal statistics from one estimator call, reduced to per-group numpy arrays.

One pass over the batch on the estimator's device (``index_add_`` over group ids, as in
:mod:`fgrpo_verl.focal`), then a single copy of G-sized arrays to the host.  The
statistics follow the paper's quantities: mu_hat (Eq. 11), the focal weight g (Eq. 12),
and the share of learning signal the focal weight keeps, sum|g*A| / sum|A| (Eq. 13).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fgrpo_verl.focal import FocalResult

# Histogram bucket upper bounds for mu_hat and g: 0 (all wrong / weight 0) and 1 get their own buckets.
RATE_BUCKETS: tuple[float, ...] = (0.0, 0.0625, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 0.9375, 0.999, 1.0)
PERCENTILES = (10, 50, 90)


@dataclass(frozen=True)
class StepStats:
    """Per-group arrays of one estimator call (G groups, B responses)."""

    success_rate: np.ndarray  # (G,) float64 mu_hat
    weight: np.ndarray  # (G,) float64 g
    size: np.ndarray  # (G,) int64 rollouts per group
    correct: np.ndarray  # (G,) int64 correct rollouts per group
    abs_focal: np.ndarray  # (G,) float64 sum |g * A| over the group
    abs_base: np.ndarray  # (G,) float64 sum |A| over the group
    first_row: np.ndarray  # (G,) int64 a row of each group (to read its uid)
    gamma: float

    @property
    def groups(self) -> int:
        return int(self.success_rate.shape[0])

    def outcomes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Boolean masks (G,): all rollouts correct, all wrong, mixed."""
        all_correct = self.correct == self.size
        all_wrong = self.correct == 0
        return all_correct, all_wrong & ~all_correct, ~all_correct & ~all_wrong


def compute_step_stats(result: FocalResult, gamma: float) -> StepStats:
    """Reduce a :class:`FocalResult` to per-group arrays on the host."""
    gi = result.group_index
    g = int(result.success_rate.shape[0])
    with torch.no_grad():
        dtype = torch.float64
        abs_f = torch.zeros(g, dtype=dtype, device=gi.device).index_add_(0, gi, result.advantages.abs().to(dtype))
        abs_b = torch.zeros(g, dtype=dtype, device=gi.device).index_add_(0, gi, result.base_advantages.abs().to(dtype))
        correct = torch.zeros(g, dtype=torch.int64, device=gi.device).index_add_(0, gi, result.correct.long())
        rows = torch.arange(gi.shape[0], device=gi.device)
        first = torch.full((g,), gi.shape[0], dtype=torch.int64, device=gi.device).scatter_reduce_(
            0, gi, rows, reduce="amin"
        )
        packed = torch.stack([result.success_rate.to(dtype), result.weight.to(dtype), result.group_size.to(dtype)])
    packed = packed.cpu().numpy()
    return StepStats(
        success_rate=packed[0],
        weight=packed[1],
        size=packed[2].astype(np.int64),
        correct=correct.cpu().numpy(),
        abs_focal=abs_f.cpu().numpy(),
        abs_base=abs_b.cpu().numpy(),
        first_row=first.cpu().numpy(),
        gamma=float(gamma),
    )


def signal_kept(abs_focal: np.ndarray, abs_base: np.ndarray) -> float:
    """sum|g*A| / sum|A|; NaN when the batch carries no signal (every group all correct or all wrong)."""
    total = float(abs_base.sum())
    return float(abs_focal.sum()) / total if total > 0 else float("nan")


def logger_metrics(stats: StepStats, prefix: str = "fgrpo") -> dict[str, float]:
    """The step's ``fgrpo/*`` scalars for verl's logger (console, wandb, tensorboard, file...)."""
    out: dict[str, float] = {f"{prefix}/gamma": stats.gamma}
    if stats.groups == 0:
        return out
    all_correct, all_wrong, mixed = stats.outcomes()
    rate, weight = stats.success_rate, stats.weight
    out.update(
        {
            f"{prefix}/groups/total": float(stats.groups),
            f"{prefix}/groups/all_correct": float(all_correct.sum()),
            f"{prefix}/groups/all_wrong": float(all_wrong.sum()),
            f"{prefix}/groups/mixed": float(mixed.sum()),
            f"{prefix}/groups/mixed_fraction": float(mixed.mean()),
            f"{prefix}/success_rate/mean": float(rate.mean()),
            f"{prefix}/success_rate/std": float(rate.std()),
            f"{prefix}/pass_at_1": float(stats.correct.sum() / max(int(stats.size.sum()), 1)),
            f"{prefix}/focal_weight/mean": float(weight.mean()),
            f"{prefix}/focal_weight/min": float(weight.min()),
            f"{prefix}/focal_weight/max": float(weight.max()),
        }
    )
    for q, r, w in zip(PERCENTILES, np.percentile(rate, PERCENTILES), np.percentile(weight, PERCENTILES), strict=True):
        out[f"{prefix}/success_rate/p{q}"] = float(r)
        out[f"{prefix}/focal_weight/p{q}"] = float(w)
    if mixed.any():
        out[f"{prefix}/focal_weight/mixed_mean"] = float(weight[mixed].mean())
    kept = signal_kept(stats.abs_focal, stats.abs_base)
    if not np.isnan(kept):
        out[f"{prefix}/signal_kept"] = kept
    return out
