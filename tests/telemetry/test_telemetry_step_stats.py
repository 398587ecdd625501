"""Per-step statistics on a hand-computed batch (paper Eqs. 11-13)."""

from __future__ import annotations

import math

import pytest
import torch

from fgrpo_verl.focal import focal_advantage
from fgrpo_verl.telemetry.step_stats import compute_step_stats, logger_metrics


def test_hand_computed_batch():
    # group 0: 1 of 4 correct (mu 0.25); group 1: 2 of 4 (mu 0.5); group 2: all correct; gamma 1
    scores = torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1])
    groups = torch.tensor([0] * 4 + [1] * 4 + [2] * 4)
    result = focal_advantage(scores, scores > 0.5, groups, gamma=1.0)
    stats = compute_step_stats(result, gamma=1.0)
    m = logger_metrics(stats)
    assert (m["fgrpo/groups/all_correct"], m["fgrpo/groups/all_wrong"], m["fgrpo/groups/mixed"]) == (1, 0, 2)
    assert m["fgrpo/success_rate/mean"] == pytest.approx((0.25 + 0.5 + 1.0) / 3)
    assert m["fgrpo/pass_at_1"] == pytest.approx(7 / 12)
    assert m["fgrpo/focal_weight/mean"] == pytest.approx((0.75 + 0.5 + 0.0) / 3)
    assert m["fgrpo/focal_weight/mixed_mean"] == pytest.approx(0.625)
    # sum|A| per group with GRPO's unbiased std: group 0 -> 1.5 + 3 * 0.5 = 3; group 1 -> 4 * sqrt(3)/2
    s0, s1 = 3.0, 4 * math.sqrt(3) / 2
    assert m["fgrpo/signal_kept"] == pytest.approx((0.75 * s0 + 0.5 * s1) / (s0 + s1), rel=1e-5)
    assert m["fgrpo/gamma"] == 1.0
    assert stats.first_row.tolist() == [0, 4, 8]


def test_no_signal_step_omits_signal_kept():
    scores = torch.tensor([1.0, 1.0, 0.0, 0.0])
    result = focal_advantage(scores, scores > 0.5, torch.tensor([0, 0, 1, 1]), gamma=0.5)
    m = logger_metrics(compute_step_stats(result, 0.5))
    assert "fgrpo/signal_kept" not in m
    assert m["fgrpo/groups/all_correct"] == 1 and m["fgrpo/groups/all_wrong"] == 1
