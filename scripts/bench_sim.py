"""Benchmark: categorical-policy steps per second, closed-form count gradients vs plain torch autograd.

Both sides run the same step at |A| = 128,000 (10,000 correct), float32, one torch thread:
softmax -> draw N actions -> focal-weighted mean-baseline surrogate -> gradient -> AdamW (lr 1e-2)
-> the per-step metrics Q_pos, M_ret and the anchor probability.

* baseline: the textbook implementation, one run at a time: ``torch.multinomial`` draws,
  per-sample rewards and advantages, ``(g * adv * log pi[a]).mean().backward()``.
* ours: :meth:`fgrpo_verl.sim.runner.CategoricalRun.run` (closed-form gradient from the draws; compiled
  metrics, sorted-uniform inverse-CDF sampler and gradient loops; compiled AdamW + softmax in float32;
  several seeds as rows of one matrix in the batched column).

Usage:  python scripts/bench_sim.py [--steps 30] [--rounds 5] [--group-sizes 8,1024,131072] [--seeds 4]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from fgrpo_verl.focal import focal_weight
from fgrpo_verl.sim.policy import CategoricalSetup, correct_mass, retained_positive_mass
from fgrpo_verl.sim.runner import CategoricalRun


class AutogradBaseline:
    """The same step written the obvious way with autograd (one run)."""

    def __init__(self, setup: CategoricalSetup, group_size: int, gamma: float, seed: int) -> None:
        self.setup, self.group_size, self.gamma = setup, group_size, gamma
        self.logits = torch.nn.Parameter(setup.initial_logits(1, torch.float32)[0])
        self.optimizer = torch.optim.AdamW([self.logits], lr=1e-2, weight_decay=0.0)
        self.generator = torch.Generator().manual_seed(seed)
        self.initial_probs = torch.softmax(self.logits.detach(), dim=0).unsqueeze(0)

    def step(self) -> None:
        k = self.setup.num_correct
        probs = torch.softmax(self.logits, dim=0)
        with torch.no_grad():
            p = probs.detach().unsqueeze(0)
            correct_mass(p, k), retained_positive_mass(p, self.initial_probs, k), p[0, 0].item()
        actions = torch.multinomial(probs.detach(), self.group_size, replacement=True, generator=self.generator)
        correct = actions < k
        rewards = torch.where(correct, 1.0, -1.0)
        advantages = rewards - rewards.mean()
        weight = focal_weight(correct.float().mean(), self.gamma)
        loss = -(weight * advantages * torch.log(probs[actions])).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()


def _autograd_block(setup: CategoricalSetup, n: int, gamma: float):
    baseline = AutogradBaseline(setup, n, gamma, 0)

    def block(steps: int) -> None:
        for _ in range(steps):
            baseline.step()

    return block


def _ours_block(setup: CategoricalSetup, n: int, gamma: float, seeds: int):
    """``CategoricalRun.run`` itself, continuing from where the last block stopped: softmax, metrics,
    sampling, gradient, AdamW per step, plus the run's history bookkeeping."""
    run = CategoricalRun(setup, n, gamma, list(range(seeds)))

    def block(steps: int) -> None:
        run.run(steps)

    return block


def measure(setup: CategoricalSetup, n: int, gamma: float, seeds: int, steps: int, rounds: int) -> dict:
    """Interleave the three contenders in ``rounds`` short blocks (a shared machine drifts); keep every rate."""
    blocks = {
        "autograd": _autograd_block(setup, n, gamma),
        "ours": _ours_block(setup, n, gamma, 1),
        "batched": _ours_block(setup, n, gamma, seeds),
    }
    for block in blocks.values():  # warm-up (and, on a first run, numba's compile)
        block(3)
    rates: dict[str, list[float]] = {name: [] for name in blocks}
    for _ in range(rounds):
        for name, block in blocks.items():
            start = time.perf_counter()
            block(steps)
            rates[name].append(steps / (time.perf_counter() - start) * (seeds if name == "batched" else 1))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="steps per timed block")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved blocks per contender")
    parser.add_argument("--group-sizes", default="8,1024,131072")
    parser.add_argument("--seeds", type=int, default=4, help="rows in the batched measurement")
    parser.add_argument("--gamma", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    setup = CategoricalSetup()
    sizes = [int(x) for x in args.group_sizes.split(",")]
    print(
        f"|A| = {setup.num_actions:,}, float32, {args.threads} thread(s), gamma {args.gamma:g}; "
        f"{args.rounds} interleaved rounds x {args.steps} steps; median (best) steps/s"
    )
    header = (
        f"{'N':>7} {'autograd step/s':>18} {'ours step/s':>18} {'speed-up':>9} "
        f"{f'ours x{args.seeds} seeds run-step/s':>30} {'speed-up':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        rates = measure(setup, n, args.gamma, args.seeds, args.steps, args.rounds)
        med = {k: statistics.median(v) for k, v in rates.items()}
        best = {k: max(v) for k, v in rates.items()}
        cols = [f"{med[k]:>8.1f} ({best[k]:>7.1f})" for k in ("autograd", "ours", "batched")]
        print(
            f"{n:>7} {cols[0]:>18} {cols[1]:>18} {med['ours'] / med['autograd']:>8.1f}x "
            f"{cols[2]:>30} {med['batched'] / med['autograd']:>8.1f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
