"""The count-based closed-form gradient against torch autograd on explicit samples (small vocabulary)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fgrpo_verl.focal import focal_weight, group_relative_advantage
from fgrpo_verl.sim.policy import (
    CategoricalSetup,
    RunRandomness,
    correct_mass,
    count_advantages,
    draw_actions,
    draw_advantages,
    loss_gradient_from_draws,
    retained_positive_mass,
    sample_counts,
    sorted_draws,
    surrogate_gradient,
)
from fgrpo_verl.sim.runner import CategoricalRun, OptimizerSettings

SETUP = CategoricalSetup(num_actions=50, num_correct=7)


def _autograd_gradient(logits: torch.Tensor, draws: torch.Tensor, gamma: float, objective: str) -> torch.Tensor:
    """The per-sample definition: L = g / N * sum_j r_j f(pi(a_j)), differentiated by autograd."""
    z = logits.clone().requires_grad_(True)
    probs = torch.softmax(z, dim=0)
    rewards = torch.where(draws < SETUP.num_correct, SETUP.reward_correct, SETUP.reward_wrong).to(z.dtype)
    # The estimator's own base advantage (Dr.GRPO: mean baseline, no std) and focal weight.
    adv = group_relative_advantage(rewards, torch.zeros_like(draws), norm_by_std=False)
    g = focal_weight((draws < SETUP.num_correct).double().mean().reshape(1), gamma)
    picked = probs[draws] if objective == "prob" else torch.log(probs[draws])
    loss = g * (adv * picked).mean()
    (grad,) = torch.autograd.grad(loss, z)
    return grad


@pytest.mark.parametrize("objective", ["prob", "logprob"])
@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("group_size", [2, 8, 64])
def test_closed_form_matches_autograd(objective: str, gamma: float, group_size: int) -> None:
    gen = torch.Generator().manual_seed(group_size)
    logits = SETUP.initial_logits(1) + 0.5 * torch.randn(1, SETUP.num_actions, generator=gen, dtype=torch.float64)
    probs = torch.softmax(logits, dim=1)
    draws = torch.multinomial(probs[0], group_size, replacement=True, generator=gen)
    counts = torch.bincount(draws, minlength=SETUP.num_actions).to(torch.float64).unsqueeze(0)
    c, mu_hat, weight = count_advantages(counts, SETUP.num_correct, gamma, SETUP)
    ours = surrogate_gradient(probs, c, objective)[0]
    reference = _autograd_gradient(logits[0], draws, gamma, objective)
    torch.testing.assert_close(ours, reference, rtol=1e-10, atol=1e-14)
    assert mu_hat.item() == pytest.approx((draws < SETUP.num_correct).double().mean().item())
    assert weight.item() == pytest.approx((1 - mu_hat.item()) ** gamma)


@pytest.mark.parametrize("objective", ["prob", "logprob"])
@pytest.mark.parametrize("group_size", [3, 40])
def test_sparse_draw_path_matches_count_path(objective: str, group_size: int) -> None:
    """The runner's in-place scatter path equals the dense count-based closed form on the same draws."""
    gen = torch.Generator().manual_seed(11)
    logits = SETUP.initial_logits(2) + torch.randn(2, SETUP.num_actions, generator=gen, dtype=torch.float64)
    probs = torch.softmax(logits, dim=1)
    draws = draw_actions(probs, group_size, [RunRandomness(1), RunRandomness(2)])
    per_draw, mu_hat, weight = draw_advantages(draws, SETUP.num_correct, 1.0, SETUP, torch.float64)
    ours = loss_gradient_from_draws(probs, draws, per_draw, objective, torch.empty_like(probs))
    counts = torch.zeros_like(probs).scatter_add_(1, draws, torch.ones_like(probs[:, :group_size]))
    c, mu_ref, weight_ref = count_advantages(counts, SETUP.num_correct, 1.0, SETUP)
    torch.testing.assert_close(ours, -surrogate_gradient(probs, c, objective), rtol=1e-10, atol=1e-15)
    torch.testing.assert_close(mu_hat, mu_ref)
    torch.testing.assert_close(weight, weight_ref)


def test_all_correct_or_all_wrong_groups_give_zero_gradient() -> None:
    probs = torch.softmax(SETUP.initial_logits(2), dim=1)
    counts = torch.zeros(2, SETUP.num_actions, dtype=torch.float64)
    counts[0, :4] = 2.0  # 8 correct draws
    counts[1, -3:] = torch.tensor([3.0, 3.0, 2.0], dtype=torch.float64)  # 8 wrong draws
    c, _, _ = count_advantages(counts, SETUP.num_correct, 0.0, SETUP)
    for objective in ("prob", "logprob"):
        assert torch.count_nonzero(surrogate_gradient(probs, c, objective)) == 0


def test_sample_counts_are_per_run_reproducible() -> None:
    probs = torch.softmax(SETUP.initial_logits(3), dim=1)
    for group_size in (16, 1000):  # torch path and NumPy multinomial path
        counts = sample_counts(probs, group_size, [RunRandomness(s) for s in (0, 1, 2)])
        assert counts.shape == (3, SETUP.num_actions)
        assert torch.all(counts.sum(dim=1) == group_size)
        alone = sample_counts(probs[1:2], group_size, [RunRandomness(1)])
        torch.testing.assert_close(counts[1:2], alone)  # a run does not depend on its batch neighbours


@pytest.mark.parametrize("group_size", [5, 200, 4000])
def test_sampled_counts_follow_the_policy(group_size: int) -> None:
    """All three samplers (two-level, torch.multinomial, NumPy counts): mean counts match N * pi."""
    setup = CategoricalSetup(num_actions=1500, num_correct=7)  # 1500 is not a multiple of the block size
    gen = torch.Generator().manual_seed(0)
    logits = setup.initial_logits(1) + torch.randn(1, 1500, generator=gen, dtype=torch.float64)
    probs = torch.softmax(logits, dim=1)
    streams = [RunRandomness(7)]
    repeats = 300 if group_size > 100 else 3000
    total = sum(sample_counts(probs, group_size, streams) for _ in range(repeats))[0]
    expected = probs[0] * group_size * repeats
    z = (total - expected) / expected.sqrt()
    assert z.abs().max() < 5.0  # 1500 cells: a 5-sigma excursion is ~1e-3 likely under the null
    assert total.sum() == group_size * repeats


def test_initial_policy_matches_paper_numbers() -> None:
    probs = torch.softmax(CategoricalSetup().initial_logits(1), dim=1)[0]
    assert probs[:10_000].sum().item() == pytest.approx(0.630, abs=1e-3)
    assert probs[0].item() == pytest.approx(4.65e-4, rel=1e-2)
    assert probs[1].item() == pytest.approx(6.30e-5, rel=1e-2)
    assert retained_positive_mass(probs.unsqueeze(0), probs.unsqueeze(0), 10_000).item() == 1.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_actions": 10, "num_correct": 10}, "num_correct must be smaller than num_actions"),
        ({"num_actions": 10, "num_correct": 0}, "num_correct"),
        ({"num_actions": 1}, "num_actions"),
        ({"anchor_logit": float("nan")}, "anchor_logit"),
    ],
)
def test_bad_setup_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        CategoricalSetup(**kwargs)


@pytest.mark.parametrize("objective", ["prob", "logprob"])
@pytest.mark.parametrize("group_size", [5, 200, 2000])  # two-level sampler, torch.multinomial, NumPy counts
def test_runner_matches_dense_reference(objective: str, group_size: int) -> None:
    """CategoricalRun's optimised step (scatter buffer, O(N) clearing) follows the textbook dense update:
    counts -> count_advantages -> surrogate_gradient -> torch.optim.AdamW, on the same random draws."""
    setup = CategoricalSetup(num_actions=3000, num_correct=300)
    run = CategoricalRun(setup, group_size, 1.0, [3], objective=objective, dtype=torch.float64)
    reference = setup.initial_logits(1, torch.float64)
    optimizer = OptimizerSettings().build_torch(reference)
    streams = [RunRandomness(3)]
    for _ in range(30):
        run.step(torch.softmax(run.logits, dim=1))
        probs = torch.softmax(reference, dim=1)
        counts = sample_counts(probs, group_size, streams)
        c, _, _ = count_advantages(counts, setup.num_correct, 1.0, setup)
        reference.grad = -surrogate_gradient(probs, c, objective)
        optimizer.step()
    torch.testing.assert_close(run.logits, reference, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("objective", ["prob", "logprob"])
@pytest.mark.parametrize("group_size", [4, 300])
def test_runner_matches_autograd_over_steps(objective: str, group_size: int) -> None:
    """The compiled step (sampler, metrics, gradient) against the per-sample loss differentiated by autograd
    and torch.optim.AdamW, on the same draws, for 25 steps on a small vocabulary."""
    gamma = 0.5
    run = CategoricalRun(SETUP, group_size, gamma, [5], objective=objective, dtype=torch.float64)
    reference = SETUP.initial_logits(1, torch.float64)[0]
    optimizer = OptimizerSettings().build_torch(reference)
    stream = RunRandomness(5)
    for _ in range(25):
        probs = torch.softmax(run.logits, dim=1)
        mu_hat, weight = run.step(probs)
        draws = sorted_draws(torch.softmax(reference, dim=0).unsqueeze(0), group_size, [stream])[0]
        reference.grad = -_autograd_gradient(reference, draws, gamma, objective)
        optimizer.step()
        correct = (draws < SETUP.num_correct).double().mean()
        assert mu_hat.item() == pytest.approx(correct.item())
        assert weight.item() == pytest.approx((1.0 - correct.item()) ** gamma)
    torch.testing.assert_close(run.logits[0], reference, rtol=1e-9, atol=1e-9)
    assert not torch.equal(run.logits[0], SETUP.initial_logits(1, torch.float64)[0])  # it did move


def test_run_metrics_match_torch_metrics() -> None:
    """The compiled pass's Q_pos, M_ret and anchor p equal the torch definitions at every recorded step."""
    run = CategoricalRun(SETUP, 16, 1.0, [0, 1], dtype=torch.float64)
    history = run.run(15)
    replay = CategoricalRun(SETUP, 16, 1.0, [0, 1], dtype=torch.float64)
    for t in range(16):
        probs = torch.softmax(replay.logits, dim=1)
        torch.testing.assert_close(history.q_pos[:, t], correct_mass(probs, SETUP.num_correct))
        torch.testing.assert_close(
            history.m_ret[:, t], retained_positive_mass(probs, replay.initial_probs, SETUP.num_correct)
        )
        torch.testing.assert_close(history.anchor_prob[:, t], probs[:, 0])
        if t < 15:
            replay.step(probs)


def test_fused_adamw_equals_torch_adamw_bitwise() -> None:
    """FusedAdamW is torch.optim.AdamW(fused=True)'s kernel without the wrapper: identical results."""
    gen = torch.Generator().manual_seed(0)
    settings = OptimizerSettings(lr=3e-2, weight_decay=0.01)
    ours, theirs = (torch.randn(3, 700, generator=torch.Generator().manual_seed(1)) for _ in range(2))
    fast, reference = settings.build(ours), settings.build_torch(theirs)
    for _ in range(20):
        grad = torch.randn(3, 700, generator=gen)
        ours.grad, theirs.grad = grad.clone(), grad.clone()
        fast.step()
        reference.step()
    assert torch.equal(ours, theirs)


def test_sorted_draws_ascend_and_stay_in_range() -> None:
    probs = torch.softmax(torch.randn(2, 1500, generator=torch.Generator().manual_seed(3)), dim=1)
    probs[:, 1400:] = 0.0  # actions with zero mass are never drawn
    draws = sorted_draws(probs, 5000, [RunRandomness(0), RunRandomness(1)])
    assert draws.shape == (2, 5000)
    assert torch.all(draws[:, 1:] >= draws[:, :-1])
    assert draws.min() >= 0 and draws.max() < 1400


@pytest.mark.parametrize("objective", ["prob", "logprob"])
@pytest.mark.parametrize("group_size", [6, 500])
def test_float32_compiled_update_matches_torch_kernels(objective: str, group_size: int) -> None:
    """float32 ``run`` (compiled AdamW + exp/softmax) against torch.softmax + torch's fused AdamW kernel
    (``step``), same seeds, 30 steps: the same trajectory up to float32 rounding."""
    setup = CategoricalSetup(num_actions=3000, num_correct=300)
    fast = CategoricalRun(setup, group_size, 1.0, [2, 9], objective=objective)
    history = fast.run(30)
    torch_path = CategoricalRun(setup, group_size, 1.0, [2, 9], objective=objective)
    for _ in range(30):
        torch_path.step(torch.softmax(torch_path.logits, dim=1))
    torch.testing.assert_close(fast.logits, torch_path.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fast.optimizer.exp_avg, torch_path.optimizer.exp_avg, rtol=1e-4, atol=1e-7)
    final = torch.softmax(torch_path.logits, dim=1)
    torch.testing.assert_close(history.q_pos[:, -1], correct_mass(final, setup.num_correct), rtol=1e-5, atol=1e-6)
    assert (fast.logits - setup.initial_logits(2, torch.float32)).abs().max() > 1e-3  # it did move


def test_compiled_softmax_recovers_from_a_far_shift() -> None:
    """Logits far above (or below) the remembered shift: exp is redone against the true max, no inf/0."""
    from fgrpo_verl.sim import kernels

    logits = torch.randn(2, 1000) * 3
    logits[0] += 500.0
    logits[1] -= 500.0
    zeros = torch.zeros_like(logits)
    probs = np.empty((2, 1000), dtype=np.float32)
    shift = np.zeros(2)
    kernels.adamw_then_softmax(
        logits.numpy(), zeros.clone().numpy(), zeros.clone().numpy(), zeros.numpy(), probs, shift,
        np.empty(1000, dtype=np.int32), *kernels.mass_buffers(2, 1000), 1, 1e-2, 0.9, 0.999, 1e-8, 0.0,
    )  # fmt: skip
    torch.testing.assert_close(torch.from_numpy(probs), torch.softmax(logits, dim=1), rtol=1e-5, atol=1e-9)
