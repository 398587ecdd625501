"""focal_grpo through verl's real code: registry, call sites, reference estimators and policy losses."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import compute_advantage
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

from fgrpo_verl.estimator import FocalInputError, add_step_listener, compute_focal_advantage, remove_step_listener

RESPONSE_LEN = 6


def random_batch(seed: int, rewards=(0.0, 1.0), n_groups: int = 7, max_group: int = 9):
    """Unequal groups (some singletons), shuffled, rewards on the last valid token like verl's reward managers."""
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, max_group + 1, (n_groups,), generator=gen)
    uid = np.repeat(np.array([f"uid-{seed}-{g}" for g in range(n_groups)], dtype=object), sizes.numpy())
    batch = len(uid)
    order = torch.randperm(batch, generator=gen).numpy()
    uid = uid[order]
    lengths = torch.randint(1, RESPONSE_LEN + 1, (batch,), generator=gen)
    mask = (torch.arange(RESPONSE_LEN)[None, :] < lengths[:, None]).float()
    choice = torch.tensor(rewards)[torch.randint(0, len(rewards), (batch,), generator=gen)]
    token_rewards = torch.zeros(batch, RESPONSE_LEN)
    token_rewards[torch.arange(batch), lengths - 1] = choice
    return token_rewards, mask, uid


def algorithm_config(**focal):
    return OmegaConf.create({"adv_estimator": "focal_grpo", "norm_adv_by_std_in_grpo": True, "focal": focal})


def test_registered_in_verl_registry():
    assert core_algos.get_adv_estimator_fn("focal_grpo") is compute_focal_advantage


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("reference", ["grpo", "grpo_vectorized"])
def test_gamma_zero_equals_verl_grpo(seed, norm, reference):
    rewards, mask, uid = random_batch(seed)
    ours, _ = compute_focal_advantage(
        rewards, mask, uid, config=algorithm_config(gamma=0.0), norm_adv_by_std_in_grpo=norm
    )
    theirs, _ = core_algos.get_adv_estimator_fn(reference)(rewards, mask, uid, norm_adv_by_std_in_grpo=norm)
    assert torch.allclose(ours, theirs, atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_gamma_zero_equals_verl_rloo(seed):
    rewards, mask, uid = random_batch(seed)
    ours, _ = compute_focal_advantage(rewards, mask, uid, config=algorithm_config(gamma=0.0, base="rloo"))
    vectorized, _ = core_algos.get_adv_estimator_fn("rloo_vectorized")(rewards, mask, uid)
    assert torch.allclose(ours, vectorized, atol=1e-6)
    # verl's loop `rloo` leaves groups of one at their raw reward; elsewhere it agrees too.
    loop, _ = core_algos.get_adv_estimator_fn("rloo")(rewards.clone(), mask, uid)
    counts = {u: int((uid == u).sum()) for u in set(uid)}
    multi = torch.tensor([counts[u] > 1 for u in uid])
    assert torch.allclose(ours[multi], loop[multi], atol=1e-6)


def test_norm_flag_is_read_from_verl_config():
    rewards, mask, uid = random_batch(11)
    config = algorithm_config(gamma=0.0)
    config.norm_adv_by_std_in_grpo = False
    ours, _ = compute_focal_advantage(rewards, mask, uid, config=config)
    dr_grpo, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, uid, norm_adv_by_std_in_grpo=False)
    assert torch.allclose(ours, dr_grpo, atol=1e-6)


def _expected_focal(rewards, mask, uid, gamma):
    """Reference by hand, group by group (a deliberately plain loop)."""
    scores = rewards.sum(-1)
    out = torch.zeros_like(scores)
    for u in set(uid):
        rows = torch.tensor(uid == u)
        group = scores[rows]
        mu = (group > 0.5).float().mean()
        base = (group - group.mean()) / (group.std() + 1e-6) if len(group) > 1 else group / (1 + 1e-6)
        out[rows] = (1 - mu) ** gamma * base
    return out[:, None] * mask


def test_verl_compute_advantage_call_site():
    rewards, mask, uid = random_batch(3)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask}, non_tensors={"uid": uid}
    )
    out = compute_advantage(data, adv_estimator="focal_grpo", config=algorithm_config(gamma=1.0))
    assert torch.allclose(out.batch["advantages"], _expected_focal(rewards, mask, uid, 1.0), atol=1e-5)
    assert torch.equal(out.batch["advantages"], out.batch["returns"])


def test_verl_v1_multi_trajectory_call_site():
    rewards, mask, uid = random_batch(4)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask}, non_tensors={"uid": uid}
    )
    batch_keys = [f"{u}_0_{i}" for i, u in enumerate(uid)]  # V1 key format: {uid}_{session}_{index}
    out = compute_advantage_for_multi_trajectories(
        data, batch_keys, adv_estimator="focal_grpo", config=algorithm_config(gamma=0.5)
    )
    assert torch.allclose(out.batch["advantages"], _expected_focal(rewards, mask, uid, 0.5), atol=1e-5)


def _captured_success_rate(rewards, mask, uid, config):
    seen = []
    listener = seen.append
    add_step_listener(listener)
    try:
        compute_focal_advantage(rewards, mask, uid, config=config)
    finally:
        remove_step_listener(listener)
    step = seen[0]
    return step.result.success_rate, step


def _true_rate(correct: np.ndarray, uid: np.ndarray, step) -> torch.Tensor:
    """Fraction of correct rollouts per group, ordered like the estimator's group ids."""
    _, inverse = np.unique(uid.astype(str), return_inverse=True)
    assert np.array_equal(inverse, step.result.group_index.numpy())
    return torch.tensor([correct[inverse == g].mean() for g in range(inverse.max() + 1)], dtype=torch.float32)


def test_success_rate_binary_rewards():
    rewards, mask, uid = random_batch(5, rewards=(0.0, 1.0))
    rate, step = _captured_success_rate(rewards, mask, uid, algorithm_config(rewards="binary"))
    assert torch.allclose(rate, _true_rate((rewards.sum(-1) == 1.0).numpy(), uid, step))


def test_success_rate_signed_math_dapo_rewards():
    rewards, mask, uid = random_batch(6, rewards=(-1.0, 1.0))
    rate, step = _captured_success_rate(rewards, mask, uid, algorithm_config(rewards="signed"))
    assert torch.allclose(rate, _true_rate((rewards.sum(-1) == 1.0).numpy(), uid, step))


def test_success_rate_dapo_overlong_shaping_read_from_reward_config():
    """math_dapo +1/-1 plus the dapo manager's length penalty (up to penalty_factor = 1)."""
    rewards, mask, uid = random_batch(7, rewards=(-1.0, 1.0))
    correct = (rewards.sum(-1) == 1.0).numpy()
    gen = torch.Generator().manual_seed(0)
    penalty = torch.rand(len(uid), generator=gen)  # in [0, 1): what the dapo manager may subtract
    penalty[::5] = 1.0  # a correct answer with the full penalty scores exactly 0
    shaped = rewards.clone()
    shaped[torch.arange(len(uid)), mask.sum(-1).long() - 1] -= penalty
    root = OmegaConf.create(
        {
            "algorithm": {"adv_estimator": "focal_grpo", "focal": {"rewards": "signed"}},
            "reward": {
                "reward_manager": {"name": "dapo"},
                "reward_kwargs": {"overlong_buffer_cfg": {"enable": True, "len": 512, "penalty_factor": 1.0}},
            },
        }
    )
    rate, step = _captured_success_rate(shaped, mask, uid, root.algorithm)
    assert step.settings.overlong_penalty == 1.0 and step.settings.success_threshold == -0.5
    assert torch.allclose(rate, _true_rate(correct, uid, step))


def test_success_rate_fractional_instruction_following_scores():
    rewards, mask, uid = random_batch(8, rewards=(0.0, 1 / 3, 0.5, 2 / 3, 1.0))
    rate, step = _captured_success_rate(rewards, mask, uid, algorithm_config(rewards="fraction"))
    correct = np.isclose(rewards.sum(-1).numpy(), 1.0)
    assert torch.allclose(rate, _true_rate(correct, uid, step))


def test_missing_uid_is_a_clear_error():
    rewards, mask, _ = random_batch(1)
    with pytest.raises(FocalInputError, match="uid"):
        compute_focal_advantage(rewards, mask, None, config=algorithm_config())
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask})
    with pytest.raises(FocalInputError, match="uid"):
        compute_advantage(data, adv_estimator="focal_grpo", config=algorithm_config())


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_rewards_name_the_uid(bad):
    rewards, mask, uid = random_batch(2)
    rewards[3, 0] = bad
    with pytest.raises(FocalInputError, match=f"NaN or inf.*{uid[3]}"):
        compute_focal_advantage(rewards, mask, uid, config=algorithm_config())


def test_shape_mismatch_is_a_clear_error():
    rewards, mask, uid = random_batch(2)
    with pytest.raises(FocalInputError, match="response_mask shape"):
        compute_focal_advantage(rewards, mask[:, :-1], uid, config=algorithm_config())
    with pytest.raises(FocalInputError, match="uid has"):
        compute_focal_advantage(rewards, mask, uid[:-1], config=algorithm_config())


def test_failing_listener_never_breaks_the_estimator(caplog):
    def broken(step):
        raise RuntimeError("exporter down")

    rewards, mask, uid = random_batch(2)
    add_step_listener(broken)
    try:
        adv, _ = compute_focal_advantage(rewards, mask, uid, config=algorithm_config())
    finally:
        remove_step_listener(broken)
    assert torch.isfinite(adv).all()
    assert "exporter down" in caplog.text


@pytest.mark.parametrize(
    "loss_mode,clip_low,clip_high", [("vanilla", 0.2, 0.2), ("vanilla", 0.2, 0.28), ("cispo", 1.0, 5.0)]
)
def test_focal_advantages_feed_verl_policy_losses(loss_mode, clip_low, clip_high):
    from verl.workers.config import ActorConfig

    rewards, mask, uid = random_batch(9)
    adv, _ = compute_focal_advantage(rewards, mask, uid, config=algorithm_config(gamma=1.0))
    actor = ActorConfig(
        strategy="fsdp",
        rollout_n=1,
        ppo_mini_batch_size=4,
        ppo_micro_batch_size_per_gpu=2,
        clip_ratio=0.2,
        clip_ratio_low=clip_low,
        clip_ratio_high=clip_high,
    )
    gen = torch.Generator().manual_seed(0)
    old_log_prob = -torch.rand(adv.shape, generator=gen)
    log_prob = (old_log_prob + 0.1 * torch.randn(adv.shape, generator=gen)).requires_grad_(True)
    loss_fn = core_algos.get_policy_loss_fn(loss_mode)
    loss, _metrics = loss_fn(old_log_prob, log_prob, adv, mask, loss_agg_mode="token-mean", config=actor)
    loss.backward()
    assert torch.isfinite(loss) and loss.item() != 0.0
    assert torch.isfinite(log_prob.grad).all() and log_prob.grad.abs().sum() > 0
