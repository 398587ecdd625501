"""fgrpo_verl.focal: the paper's Eqs. 11-13 as tensor math (no verl involved)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fgrpo_verl.focal import focal_advantage, focal_weight, group_relative_advantage, group_success_rate


def _batch(group_sizes: list[int], rewards: list[float]) -> tuple[torch.Tensor, torch.Tensor]:
    index = torch.repeat_interleave(torch.arange(len(group_sizes)), torch.tensor(group_sizes))
    return torch.tensor(rewards, dtype=torch.float32), index


@st.composite
def grouped_binary_batches(draw):
    sizes = draw(st.lists(st.integers(1, 9), min_size=1, max_size=12))
    rewards = draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=sum(sizes), max_size=sum(sizes)))
    perm = draw(st.permutations(range(sum(sizes))))
    scores, index = _batch(sizes, rewards)
    order = torch.tensor(perm)  # groups need not be contiguous in the batch
    return scores[order], index[order], sizes


def test_paper_weights_at_n8():
    """paper.md: at N = 8, gamma 0.5 gives g from 0.935 (1 correct) to 0.354 (7 correct)."""
    mu = torch.arange(1, 8) / 8
    assert focal_weight(mu, 0.5)[0].item() == pytest.approx(0.935, abs=5e-4)
    assert focal_weight(mu, 0.5)[-1].item() == pytest.approx(0.354, abs=5e-4)
    assert focal_weight(mu, 1.0)[0].item() == pytest.approx(0.875)
    assert focal_weight(mu, 1.0)[-1].item() == pytest.approx(0.125)


def test_success_rate_counts_correct_per_group_with_unequal_sizes():
    correct = torch.tensor([1, 0, 0, 1, 1, 0], dtype=torch.bool)
    index = torch.tensor([0, 0, 0, 1, 1, 2])
    rate, size = group_success_rate(correct, index)
    assert rate.tolist() == pytest.approx([1 / 3, 1.0, 0.0])
    assert size.tolist() == [3.0, 2.0, 1.0]


def test_grpo_base_matches_per_group_reference_including_singletons():
    scores, index = _batch([3, 1, 4], [1.0, 0.0, 0.0, 1.0, 0.5, 0.25, 1.0, 0.0])
    adv = group_relative_advantage(scores, index, "grpo", norm_by_std=True, epsilon=1e-6)
    expected = []
    for gid in range(3):
        group = scores[index == gid]
        if len(group) == 1:  # verl's convention: mean 0, std 1
            expected += (group / (1 + 1e-6)).tolist()
        else:
            expected += ((group - group.mean()) / (group.std() + 1e-6)).tolist()
    assert adv.tolist() == pytest.approx(expected, abs=1e-6)


def test_rloo_base_is_leave_one_out():
    scores, index = _batch([3, 1], [1.0, 0.0, 0.0, 1.0])
    adv = group_relative_advantage(scores, index, "rloo")
    assert adv.tolist() == pytest.approx([1.0, -0.5, -0.5, 0.0])


@settings(max_examples=150, deadline=None)
@given(batch=grouped_binary_batches(), gamma=st.floats(0.0, 4.0))
def test_weight_is_in_unit_interval(batch, gamma):
    scores, index, _ = batch
    result = focal_advantage(scores, scores > 0.5, index, gamma)
    assert bool(((result.weight >= 0) & (result.weight <= 1)).all())


@settings(max_examples=150, deadline=None)
@given(
    batch=grouped_binary_batches(),
    gamma=st.floats(0.0, 4.0),
    norm=st.booleans(),
    base=st.sampled_from(["grpo", "rloo"]),
)
def test_uniform_groups_keep_zero_advantage(batch, gamma, norm, base):
    scores, index, _ = batch
    result = focal_advantage(scores, scores > 0.5, index, gamma, base=base, norm_by_std=norm)
    size = result.group_size[index]
    uniform = (result.success_rate[index] == 0) | (result.success_rate[index] == 1)
    multi = uniform & (size > 1)
    assert torch.all(result.advantages[multi] == 0)


@settings(max_examples=150, deadline=None)
@given(batch=grouped_binary_batches(), norm=st.booleans(), base=st.sampled_from(["grpo", "rloo"]))
def test_gamma_zero_is_the_identity(batch, norm, base):
    scores, index, _ = batch
    result = focal_advantage(scores, scores > 0.5, index, 0.0, base=base, norm_by_std=norm)
    assert torch.equal(result.advantages, result.base_advantages)


@settings(max_examples=150, deadline=None)
@given(
    batch=grouped_binary_batches(),
    gamma=st.floats(0.0, 4.0),
    norm=st.booleans(),
    base=st.sampled_from(["grpo", "rloo"]),
)
def test_mean_centred_bases_still_sum_to_zero_within_groups(batch, gamma, norm, base):
    scores, index, sizes = batch
    result = focal_advantage(scores, scores > 0.5, index, gamma, base=base, norm_by_std=norm)
    sums = torch.zeros(len(sizes)).index_add_(0, index, result.advantages)
    multi = torch.tensor(sizes) > 1
    assert torch.allclose(sums[multi], torch.zeros_like(sums[multi]), atol=1e-4)


def test_focal_scales_each_group_by_its_weight():
    scores, index = _batch([4, 4], [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    result = focal_advantage(scores, scores > 0.5, index, gamma=1.0)
    assert result.weight.tolist() == pytest.approx([0.75, 0.25])
    assert result.advantages[:4].tolist() == pytest.approx((0.75 * result.base_advantages[:4]).tolist())
    assert result.advantages[4:].tolist() == pytest.approx((0.25 * result.base_advantages[4:]).tolist())


def test_bf16_rewards_give_float32_advantages_close_to_float32_path():
    scores, index = _batch([4, 4], [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    exact = focal_advantage(scores, scores > 0.5, index, 0.5)
    half = focal_advantage(scores.to(torch.bfloat16), scores > 0.5, index, 0.5)
    assert half.advantages.dtype == torch.float32
    assert torch.allclose(half.advantages, exact.advantages, atol=1e-6)


def test_no_gradient_flows_through_weight_or_advantage():
    scores, index = _batch([3], [1.0, 0.0, 1.0])
    scores.requires_grad_(True)
    result = focal_advantage(scores, scores.detach() > 0.5, index, 0.5)
    assert not result.advantages.requires_grad and not result.weight.requires_grad


@pytest.mark.parametrize("gamma", [-0.1, math.nan])
def test_invalid_gamma_is_rejected(gamma):
    with pytest.raises(ValueError, match="gamma"):
        focal_weight(torch.tensor([0.5]), gamma)


def test_unknown_base_is_rejected():
    with pytest.raises(ValueError, match="base"):
        group_relative_advantage(torch.zeros(2), torch.tensor([0, 0]), "ppo")  # type: ignore[arg-type]
