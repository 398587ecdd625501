"""verl glue: the ``focal_grpo`` advantage estimator.

verl calls a registered estimator from ``ray_trainer.compute_advantage`` as
``fn(token_level_rewards=, response_mask=, config=algorithm_config, index=uid)``; it passes
no ``epsilon`` and no ``norm_adv_by_std_in_grpo``, so both are read from ``config`` here.
The math lives in :mod:`fgrpo_verl.focal`; this module validates inputs, reads settings and
tells step listeners (telemetry) what it computed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from fgrpo_verl.focal import FocalResult, focal_advantage
from fgrpo_verl.settings import SCORE_TOLERANCE, FocalSettings, settings_from_algorithm_config

logger = logging.getLogger(__name__)

StepListener = Callable[["FocalStep"], None]
_listeners: list[StepListener] = []


class FocalInputError(ValueError):
    """The batch handed to the estimator cannot be used (shape, NaN/inf, missing uid)."""


class FocalStep:
    """What one estimator call computed, for listeners (telemetry); tensors are on the batch's device."""

    def __init__(self, result: FocalResult, scores: torch.Tensor, index: np.ndarray, settings: FocalSettings):
        self.result = result
        self.scores = scores
        self.index = index
        self.settings = settings


def add_step_listener(listener: StepListener) -> None:
    """Call ``listener(FocalStep)`` after every estimator call (errors are logged, never raised)."""
    if listener not in _listeners:
        _listeners.append(listener)


def remove_step_listener(listener: StepListener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def _notify(step: FocalStep) -> None:
    for listener in list(_listeners):
        try:
            listener(step)
        except Exception:  # telemetry must never stop training
            logger.exception("fgrpo_verl step listener %r failed; training continues", listener)


def _check_inputs(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any) -> np.ndarray:
    if index is None:
        raise FocalInputError(
            "focal_grpo needs the rollout group ids: the batch has no 'uid' (non_tensor_batch['uid']). "
            "Group sampling (actor_rollout_ref.rollout.n > 1) adds it; pass index=... when calling directly."
        )
    if token_level_rewards.dim() != 2:
        raise FocalInputError(
            f"token_level_rewards must be (batch, response_len), got shape {tuple(token_level_rewards.shape)}"
        )
    if tuple(response_mask.shape) != tuple(token_level_rewards.shape):
        raise FocalInputError(
            f"response_mask shape {tuple(response_mask.shape)} does not match token_level_rewards shape "
            f"{tuple(token_level_rewards.shape)}"
        )
    index = np.asarray(index, dtype=object) if not isinstance(index, np.ndarray) else index
    if index.shape[0] != token_level_rewards.shape[0]:
        raise FocalInputError(
            f"uid has {index.shape[0]} entries but the batch has {token_level_rewards.shape[0]} responses"
        )
    return index


def _check_finite(scores: torch.Tensor, index: np.ndarray) -> None:
    # Checked on the per-response sums: a NaN or inf token makes its sum non-finite, and this
    # costs O(B) instead of another pass over the (B, T) tensor.
    finite = torch.isfinite(scores)
    if not bool(finite.all()):
        bad = torch.nonzero(~finite).flatten()[:5].tolist()
        uids = [str(index[i]) for i in bad]
        raise FocalInputError(
            f"token_level_rewards contain NaN or inf in {int((~finite).sum())} responses "
            f"(rows {bad}, uid {uids}); check the reward function for these prompts"
        )


def _group_ids(index: np.ndarray, device: torch.device) -> torch.Tensor:
    # np.unique on the uid strings: O(B log B) in C, no Python loop over groups.
    _, inverse = np.unique(index.astype(str), return_inverse=True)
    return torch.from_numpy(inverse.reshape(-1).astype(np.int64)).to(device)


def compute_focal_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Any = None,
    config: Any = None,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool | None = None,
    settings: FocalSettings | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """F-GRPO advantages (paper Eqs. 11-13), broadcast over response tokens.

    Args:
        token_level_rewards: (B, T) rewards; their per-row sum is the sequence reward.
        response_mask: (B, T) 1 for response tokens.
        index: (B,) group ids (verl's ``uid``): rollouts of one prompt share an id.
        config: verl's ``algorithm`` config; settings under ``algorithm.focal``.
        epsilon: GRPO's std guard.
        norm_adv_by_std_in_grpo: overrides ``config.norm_adv_by_std_in_grpo`` when given.
        settings: pre-validated settings (skips reading ``config``).

    Returns:
        ``(advantages, returns)``, both (B, T) and equal, as verl's outcome estimators.
    """
    settings = settings or settings_from_algorithm_config(config)
    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = bool(config.get("norm_adv_by_std_in_grpo", True)) if config is not None else True
    index = _check_inputs(token_level_rewards, response_mask, index)
    with torch.no_grad():
        scores = token_level_rewards.sum(dim=-1)
        _check_finite(scores, index)
        correct = scores >= settings.success_threshold - SCORE_TOLERANCE
        result = focal_advantage(
            scores,
            correct,
            _group_ids(index, scores.device),
            gamma=settings.gamma,
            base=settings.base,
            norm_by_std=norm_adv_by_std_in_grpo,
            epsilon=epsilon,
        )
        advantages = result.advantages.unsqueeze(-1) * response_mask
    if _listeners:
        _notify(FocalStep(result, scores, index, settings))
    return advantages, advantages
