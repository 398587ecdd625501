"""Focal-weighted group-relative advantages: pure tensor math, no verl import.

Notation follows F-GRPO (Plyusov et al., arXiv 2602.06717):

* Eq. 11 -- group success rate   mu_hat(x) = X / N   (X correct rollouts out of N)
* Eq. 12 -- focal weight         g(x) = (1 - mu_hat(x)) ** gamma,  gamma >= 0
* Eq. 13 -- focal advantage      A_F(x, y_i) = g(x) * A(x, y_i)

``A`` is the group-relative base advantage: GRPO's ``(R_i - mean) / (std + eps)``,
its mean-only (Dr.GRPO-style) variant, or RLOO's leave-one-out baseline.  ``g`` is a
per-prompt constant: it is computed without gradient and broadcast over the group.

Everything here is one vectorised pass over the batch (``index_add_`` over group ids):
no Python loop over groups or prompts, any device, any floating dtype of rewards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

BaseEstimator = Literal["grpo", "rloo"]
BASES: tuple[str, ...] = ("grpo", "rloo")


@dataclass(frozen=True)
class FocalResult:
    """Everything one focal pass computes; per-sample tensors have shape (B,), per-group (G,)."""

    advantages: torch.Tensor  # (B,) g * A, float32 (float64 if the scores were float64)
    base_advantages: torch.Tensor  # (B,) A before the focal weight
    correct: torch.Tensor  # (B,) bool, which rollouts count as correct
    group_index: torch.Tensor  # (B,) long, contiguous group id 0..G-1 of each rollout
    group_size: torch.Tensor  # (G,) N per group
    success_rate: torch.Tensor  # (G,) mu_hat, Eq. 11
    weight: torch.Tensor  # (G,) g, Eq. 12


def _compute_dtype(scores: torch.Tensor) -> torch.dtype:
    # bf16/fp16 rewards are promoted: the group statistics need more than 8 mantissa bits.
    return torch.float64 if scores.dtype == torch.float64 else torch.float32


def _num_groups(group_index: torch.Tensor, num_groups: int | None) -> int:
    if num_groups is not None:
        return num_groups
    return int(group_index.max().item()) + 1 if group_index.numel() else 0


def _group_sum(values: torch.Tensor, group_index: torch.Tensor, num_groups: int) -> torch.Tensor:
    out = torch.zeros(num_groups, dtype=values.dtype, device=values.device)
    return out.index_add_(0, group_index, values)


def group_success_rate(
    correct: torch.Tensor, group_index: torch.Tensor, num_groups: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 11: mu_hat = X / N per group.

    Args:
        correct: (B,) bool (or 0/1) tensor, one entry per rollout.
        group_index: (B,) long tensor of contiguous group ids 0..G-1.
        num_groups: G, if known (saves a device sync).

    Returns:
        ``(success_rate, group_size)``, both (G,) float32.  Every id in 0..G-1 must occur.
    """
    g = _num_groups(group_index, num_groups)
    ones = torch.ones(group_index.shape[0], dtype=torch.float32, device=group_index.device)
    size = _group_sum(ones, group_index, g)
    successes = _group_sum(correct.to(torch.float32), group_index, g)
    return successes / size.clamp_min(1.0), size


@torch.no_grad()
def focal_weight(success_rate: torch.Tensor, gamma: float) -> torch.Tensor:
    """Eq. 12: g = (1 - mu_hat) ** gamma, in [0, 1]; gamma = 0 gives exactly 1 (0 ** 0 = 1)."""
    if not gamma >= 0.0:  # also rejects NaN
        raise ValueError(f"gamma must be a number >= 0, got {gamma!r}")
    return torch.pow((1.0 - success_rate).clamp(0.0, 1.0), gamma)


@torch.no_grad()
def group_relative_advantage(
    scores: torch.Tensor,
    group_index: torch.Tensor,
    base: BaseEstimator = "grpo",
    norm_by_std: bool = True,
    epsilon: float = 1e-6,
    num_groups: int | None = None,
) -> torch.Tensor:
    """The base advantage A of Eq. 13, one scalar per rollout.

    * ``grpo``: (R_i - mean) / (std + eps) with the unbiased std, as verl's ``grpo``;
      ``norm_by_std=False`` gives R_i - mean (Dr.GRPO).  Groups of one keep mean 0, std 1
      (verl's convention), i.e. A = R / (1 + eps).
    * ``rloo``: R_i - mean of the other N - 1 rewards = N / (N - 1) * (R_i - mean);
      0 for groups of one (as verl's ``rloo_vectorized``).
    """
    if base not in BASES:
        raise ValueError(f"unknown base estimator {base!r}; expected one of {BASES}")
    dtype = _compute_dtype(scores)
    s = scores.to(dtype)
    g = _num_groups(group_index, num_groups)
    size = _group_sum(torch.ones_like(s), group_index, g)
    mean = _group_sum(s, group_index, g) / size.clamp_min(1.0)
    centred = s - mean[group_index]
    n = size[group_index]
    if base == "rloo":
        return torch.where(n > 1, centred * n / (n - 1).clamp_min(1.0), torch.zeros_like(s))
    # Two-pass variance: matches torch.std on each group (no sum-of-squares cancellation).
    var = _group_sum(centred * centred, group_index, g) / (size - 1.0).clamp_min(1.0)
    singleton = n <= 1
    centred = torch.where(singleton, s, centred)  # verl: mean 0 for a group of one
    if not norm_by_std:
        return centred
    std = torch.where(singleton, torch.ones_like(s), var.sqrt()[group_index])
    return centred / (std + epsilon)


@torch.no_grad()
def focal_advantage(
    scores: torch.Tensor,
    correct: torch.Tensor,
    group_index: torch.Tensor,
    gamma: float,
    base: BaseEstimator = "grpo",
    norm_by_std: bool = True,
    epsilon: float = 1e-6,
) -> FocalResult:
    """Eqs. 11-13 in one pass: A_F = (1 - mu_hat) ** gamma * A.

    Args:
        scores: (B,) sequence-level rewards (any float dtype, any device).
        correct: (B,) bool, whether each rollout counts as correct (drives mu_hat only).
        group_index: (B,) long, contiguous group ids 0..G-1 (rollouts of one prompt share an id).
        gamma: focal exponent, >= 0; 0 reproduces the base estimator exactly.
        base: ``grpo`` or ``rloo``.
        norm_by_std: GRPO only: divide by the group std (False = Dr.GRPO).
        epsilon: GRPO's std guard.
    """
    g_count = _num_groups(group_index, None)
    base_adv = group_relative_advantage(scores, group_index, base, norm_by_std, epsilon, g_count)
    success_rate, size = group_success_rate(correct, group_index, g_count)
    weight = focal_weight(success_rate, gamma)
    advantages = weight.to(base_adv.dtype)[group_index] * base_adv
    return FocalResult(
        advantages=advantages,
        base_advantages=base_adv,
        correct=correct.to(torch.bool),
        group_index=group_index,
        group_size=size,
        success_rate=success_rate,
        weight=weight,
    )
