"""Train the categorical policy with AdamW for T steps and record Q_pos, M_ret over time.

All seeds of one (N, gamma) cell run together as rows of one logit matrix: AdamW is
element-wise, so rows never interact, and each row has its own sampling generator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fgrpo_verl.sim.policy import (
    OBJECTIVES,
    CategoricalSetup,
    Objective,
    RunRandomness,
    correct_mass,
    count_advantages,
    draw_actions,
    draw_advantages,
    loss_gradient_from_draws,
    retained_positive_mass,
    sample_counts,
    surrogate_gradient,
    uses_count_sampler,
)
from fgrpo_verl.sim.validation import require_gamma, require_int, require_positive


@dataclass(frozen=True)
class OptimizerSettings:
    """AdamW, lr 1e-2 (BroRL), torch's default betas and eps; no weight decay (see the README: 0.01 pulls
    the initial logits toward uniform and by itself lowers Q_pos at small N)."""

    lr: float = 1e-2
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        require_positive("lr", self.lr)
        require_positive("eps", self.eps)
        for name in ("beta1", "beta2"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        if not self.weight_decay >= 0.0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")

    def build(self, params: torch.Tensor) -> torch.optim.AdamW:
        return torch.optim.AdamW(
            [params],
            lr=self.lr,
            betas=(self.beta1, self.beta2),
            eps=self.eps,
            weight_decay=self.weight_decay,
            foreach=False,
            fused=True,  # one CPU kernel over all |A| x seeds logits
        )


@dataclass
class CellHistory:
    """Metrics of one (N, gamma) cell: tensors of shape (seeds, steps + 1), index t = after t updates."""

    group_size: int
    gamma: float
    seeds: list[int]
    q_pos: torch.Tensor
    m_ret: torch.Tensor
    anchor_prob: torch.Tensor
    success_rate: torch.Tensor  # (seeds, steps): mu_hat of the group drawn at step t
    focal_weight: torch.Tensor  # (seeds, steps): g at step t


class CategoricalRun:
    """One (N, gamma) cell of the sweep, all seeds batched."""

    def __init__(
        self,
        setup: CategoricalSetup,
        group_size: int,
        gamma: float,
        seeds: Sequence[int],
        optimizer: OptimizerSettings | None = None,
        objective: Objective = "logprob",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.setup = setup
        self.group_size = require_int("group_size (N)", group_size, minimum=1)
        self.gamma = require_gamma(gamma)
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        if not seeds:
            raise ValueError("seeds must name at least one seed")
        self.objective = objective
        self.seeds = [int(s) for s in seeds]
        self.streams = [RunRandomness(s) for s in self.seeds]
        self.logits = setup.initial_logits(len(self.seeds), dtype)
        self.optimizer = (optimizer or OptimizerSettings()).build(self.logits)
        self.initial_probs = torch.softmax(self.logits, dim=1)
        self._buffer = torch.zeros_like(self.logits)  # reused gradient storage (small-N path)
        self._stale: torch.Tensor | None = None  # positions of the buffer still holding last step's values

    @torch.no_grad()
    def step(self, probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One AdamW ascent step on L from the current probabilities; returns (mu_hat, g)."""
        k, n = self.setup.num_correct, self.group_size
        if uses_count_sampler(n, self.setup.num_actions):
            counts = sample_counts(probs, n, self.streams)
            c, mu_hat, weight = count_advantages(counts, k, self.gamma, self.setup)
            self.logits.grad = surrogate_gradient(probs, c, self.objective).neg_()  # AdamW minimises -L
        else:
            draws = draw_actions(probs, n, self.streams)
            per_draw, mu_hat, weight = draw_advantages(draws, k, self.gamma, self.setup, probs.dtype)
            # logprob leaves the buffer zero except at this step's draws: clear just those next time.
            stale = self._stale if self.objective == "logprob" else None
            self.logits.grad = loss_gradient_from_draws(probs, draws, per_draw, self.objective, self._buffer, stale)
            self._stale = draws
        self.optimizer.step()
        return mu_hat, weight

    def run(
        self,
        steps: int,
        on_step: Callable[[], None] | None = None,
        on_record: Callable[[int, CellHistory], None] | None = None,
    ) -> CellHistory:
        """Train for ``steps`` updates.

        ``on_record(t, history)`` is called for t = 0 ... steps once the state after t updates is
        recorded: columns 0..t of q_pos / m_ret / anchor_prob and 0..t-1 of success_rate /
        focal_weight are filled (the live figures for ``simulate --metrics-port``).
        """
        steps = require_int("steps", steps, minimum=1)
        runs, k = len(self.seeds), self.setup.num_correct
        dtype = self.logits.dtype
        q_pos, m_ret, anchor = (torch.empty(runs, steps + 1, dtype=dtype) for _ in range(3))
        mu_hist, g_hist = torch.empty(runs, steps, dtype=dtype), torch.empty(runs, steps, dtype=dtype)
        history = CellHistory(self.group_size, self.gamma, self.seeds, q_pos, m_ret, anchor, mu_hist, g_hist)
        for t in range(steps + 1):
            with torch.no_grad():
                probs = torch.softmax(self.logits, dim=1)
            q_pos[:, t] = correct_mass(probs, k)
            m_ret[:, t] = retained_positive_mass(probs, self.initial_probs, k)
            anchor[:, t] = probs[:, 0]
            if on_record is not None:
                on_record(t, history)
            if t == steps:
                break
            mu_hist[:, t], g_hist[:, t] = self.step(probs)
            if on_step is not None:
                on_step()
        return history
