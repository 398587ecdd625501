"""The categorical policy of F-GRPO section 5.1 / appendix J (after BroRL), one step at a time.

A softmax policy pi = softmax(z) over |A| actions; the first ``num_correct`` are correct
(R = +1), the rest wrong (R = -1).  Action 0 is the *anchor*: the one correct action that
starts out likely (z = 5), the other correct ones start at z = 3, wrong ones at z = 0.

Each step draws N actions i.i.d. from pi and ascends the group-relative surrogate

    L(z) = g / N * sum_j r_j * pi(a_j),     r_j = R_j - mean(R)   (mean baseline, no std)

with g = (1 - mu_hat) ** gamma the focal weight (paper Eq. 12, from :mod:`fgrpo_verl.focal`).
Only the per-action sample counts n_a matter, so the gradient has a closed form
(see :func:`surrogate_gradient`) -- no per-sample loop and no autograd graph.  Several
independent runs (seeds) are rows of one ``(R, |A|)`` logit matrix.

The torch functions here are the readable reference forms (tested against autograd);
:class:`~fgrpo_verl.sim.runner.CategoricalRun` runs the same maths as compiled loops
(:mod:`fgrpo_verl.sim.kernels`) and draws with :func:`sorted_draws`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from fgrpo_verl.focal import focal_weight
from fgrpo_verl.sim.validation import require_int, require_number

Objective = Literal["prob", "logprob"]
OBJECTIVES: tuple[str, ...] = ("prob", "logprob")


@dataclass(frozen=True)
class CategoricalSetup:
    """The action space and initial logits (paper appendix J defaults)."""

    num_actions: int = 128_000
    num_correct: int = 10_000
    anchor_logit: float = 5.0
    correct_logit: float = 3.0
    wrong_logit: float = 0.0
    reward_correct: float = 1.0
    reward_wrong: float = -1.0

    def __post_init__(self) -> None:
        require_int("num_actions", self.num_actions, minimum=2)
        require_int("num_correct", self.num_correct, minimum=1)
        if self.num_correct >= self.num_actions:
            raise ValueError(
                f"num_correct must be smaller than num_actions (at least one wrong action), got "
                f"num_correct={self.num_correct} >= num_actions={self.num_actions}"
            )
        for name in ("anchor_logit", "correct_logit", "wrong_logit", "reward_correct", "reward_wrong"):
            require_number(name, getattr(self, name))
        if not self.reward_correct > self.reward_wrong:
            raise ValueError(
                f"reward_correct must exceed reward_wrong, got {self.reward_correct} <= {self.reward_wrong}"
            )

    def initial_logits(self, runs: int = 1, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """(runs, |A|) logits: anchor, then the other correct actions, then the wrong ones."""
        z = torch.full((self.num_actions,), float(self.wrong_logit), dtype=dtype)
        z[: self.num_correct] = self.correct_logit
        z[0] = self.anchor_logit
        return z.expand(runs, -1).clone()


def correct_mass(probs: torch.Tensor, num_correct: int) -> torch.Tensor:
    """Q_pos = sum of pi over the correct actions, per run: (R, |A|) -> (R,)."""
    return probs[:, :num_correct].sum(dim=1)


def retained_positive_mass(probs: torch.Tensor, initial_probs: torch.Tensor, num_correct: int) -> torch.Tensor:
    """M_ret = 1 - sum_{a correct} max(0, pi_0(a) - pi_t(a)) / sum_{a correct} pi_0(a), per run.

    1 means no correct action lost probability; it falls as mass concentrates on a few.
    """
    p0 = initial_probs[:, :num_correct]
    lost = (p0 - probs[:, :num_correct]).clamp_min(0.0).sum(dim=1)
    return 1.0 - lost / p0.sum(dim=1)


class RunRandomness:
    """Per-run random streams: one run's trajectory never depends on which runs share its batch."""

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        self.torch = torch.Generator().manual_seed(self.seed)
        self.numpy = np.random.default_rng(self.seed)


_BLOCK = 512  # two-level sampler block size: |A| / 512 blocks, then 512 actions inside a block
_TWO_LEVEL_MAX_DRAWS = 64


def _two_level_draws(probs: torch.Tensor, group_size: int, generator: torch.Generator) -> torch.Tensor:
    """Exact i.i.d. draws for small N: pick a block by its mass, then an action inside the block.

    ``torch.multinomial`` builds a cumulative table over all |A| actions on every call; for a
    handful of draws that table dominates the step.  Block sums cost one read of ``probs``.
    """
    num_actions = probs.shape[0]
    blocks = -(-num_actions // _BLOCK)
    spare = blocks * _BLOCK - num_actions
    padded = (torch.nn.functional.pad(probs, (0, spare)) if spare else probs).view(blocks, _BLOCK)
    block = torch.multinomial(padded.sum(dim=1), group_size, replacement=True, generator=generator)
    # Inside the block: inverse CDF in float64 (torch.multinomial would draw 512 exponentials per row).
    cdf = padded[block].double().cumsum(dim=1)
    u = torch.rand(group_size, 1, dtype=torch.float64, generator=generator) * cdf[:, -1:]
    inside = torch.searchsorted(cdf, u, right=True).squeeze(1).clamp_max(_BLOCK - 1)
    return block * _BLOCK + inside


def draw_actions(probs: torch.Tensor, group_size: int, streams: Sequence[RunRandomness]) -> torch.Tensor:
    """``group_size`` i.i.d. actions per run from ``probs`` (R, |A|); returns (R, N) long."""
    if group_size <= _TWO_LEVEL_MAX_DRAWS:
        rows = [_two_level_draws(probs[i], group_size, s.torch) for i, s in enumerate(streams)]
    else:
        rows = [
            torch.multinomial(probs[i], group_size, replacement=True, generator=s.torch) for i, s in enumerate(streams)
        ]
    return torch.stack(rows)


def sorted_draws(probs: torch.Tensor, group_size: int, streams: Sequence[RunRandomness]) -> torch.Tensor:
    """``group_size`` i.i.d. actions per run from ``probs`` (R, |A|), ascending; returns (R, N) long.

    Inverse CDF with sorted uniforms from exponential spacings (compiled walk over block sums, see
    :mod:`fgrpo_verl.sim.kernels`): O(N + |A|) for any N, each run from its own NumPy stream.
    """
    from fgrpo_verl.sim import kernels

    runs = probs.shape[0]
    if len(streams) != runs:
        raise ValueError(f"streams must give one random stream per row of probs, got {len(streams)} for {runs} rows")
    spacings = np.stack([s.numpy.standard_exponential(group_size + 1) for s in streams])
    draws = np.empty((runs, group_size), dtype=np.int64)
    stats = np.empty((runs, kernels.NUM_STATS))
    p = probs.detach().contiguous().numpy()
    chunks, blocks = kernels.mass_buffers(runs, probs.shape[1])
    # metrics (of action 0 alone) unused here
    kernels.measure_and_draw(p, p[:, :1], spacings, draws, stats, chunks, blocks, False)
    return torch.from_numpy(draws)


def sample_counts(probs: torch.Tensor, group_size: int, streams: Sequence[RunRandomness]) -> torch.Tensor:
    """Draw ``group_size`` i.i.d. actions per run; return per-action counts n_a, shape (R, |A|).

    The draws are :func:`sorted_draws` (the sampler :class:`~fgrpo_verl.sim.runner.CategoricalRun`
    uses), counted with one ``bincount``.
    """
    runs, num_actions = probs.shape
    draws = sorted_draws(probs, group_size, streams)
    flat = draws + torch.arange(runs).unsqueeze(1) * num_actions  # one bincount for all runs
    return torch.bincount(flat.reshape(-1), minlength=runs * num_actions).reshape(runs, num_actions).to(probs.dtype)


def draw_advantages(
    draws: torch.Tensor, num_correct: int, gamma: float, setup: CategoricalSetup, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-draw g * r_j / N for explicit draws (R, N): the sparse form of :func:`count_advantages`."""
    correct = draws < num_correct
    mu_hat = correct.to(dtype).mean(dim=1)
    weight = focal_weight(mu_hat, gamma).to(dtype)
    spread = setup.reward_correct - setup.reward_wrong
    scale = weight / draws.shape[1]
    per_draw = torch.where(
        correct, (spread * (1.0 - mu_hat) * scale).unsqueeze(1), (-spread * mu_hat * scale).unsqueeze(1)
    )
    return per_draw, mu_hat, weight


def loss_gradient_from_draws(
    probs: torch.Tensor,
    draws: torch.Tensor,
    per_draw: torch.Tensor,
    objective: Objective,
    out: torch.Tensor,
    stale: torch.Tensor | None = None,
) -> torch.Tensor:
    """-dL/dz (the gradient AdamW minimises) written into ``out``: the maths of :func:`surrogate_gradient`
    with c scattered from the N draws and no |A|-sized temporaries.

    For ``logprob`` the -p * sum(c) term is dropped: sum(c) = g / N * sum_j (R_j - mean R) = 0
    identically for the mean baseline, so -dL/dz = -c.  ``out`` must be all zeros on entry except,
    optionally, at ``stale`` (the previous step's draws, cleared here in O(N) instead of O(|A|)).
    """
    if stale is None:
        out.zero_()
    else:
        out.scatter_(1, stale, 0.0)
    out.scatter_add_(1, draws, -per_draw)  # out = -c
    if objective == "prob":
        inner = (per_draw * probs.gather(1, draws)).sum(dim=1, keepdim=True)  # <c, p> from N terms
        out.add_(inner).mul_(probs)  # p * (<c, p> - c)
    return out


def group_success_rate_from_counts(counts: torch.Tensor, num_correct: int) -> torch.Tensor:
    """mu_hat = X / N (paper Eq. 11) per run, from per-action counts."""
    return counts[:, :num_correct].sum(dim=1) / counts.sum(dim=1)


def count_advantages(
    counts: torch.Tensor, num_correct: int, gamma: float, setup: CategoricalSetup
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-action summed, focal-weighted advantage c_a = g / N * sum_{j: a_j = a} r_j.

    With binary rewards the mean baseline gives r = (R_c - R_w)(1 - mu_hat) to every correct
    draw and r = -(R_c - R_w) mu_hat to every wrong one, so c_a = g / N * n_a * r(a).

    Returns ``(c, mu_hat, g)`` with shapes (R, |A|), (R,), (R,).
    """
    group_size = counts[0].sum()
    mu_hat = group_success_rate_from_counts(counts, num_correct)
    weight = focal_weight(mu_hat, gamma).to(counts.dtype)  # Eq. 12, shared with the estimator
    spread = setup.reward_correct - setup.reward_wrong
    scale = (weight / group_size).unsqueeze(1)
    c = counts * (-spread * mu_hat).unsqueeze(1) * scale
    c[:, :num_correct] = counts[:, :num_correct] * (spread * (1.0 - mu_hat)).unsqueeze(1) * scale
    return c, mu_hat, weight


def surrogate_gradient(probs: torch.Tensor, c: torch.Tensor, objective: Objective = "prob") -> torch.Tensor:
    """dL/dz of L = sum_a c_a * f(pi_a), in closed form (softmax Jacobian J = diag(p) - p p^T).

    * ``prob`` (f = pi, the paper's surrogate):   dL/dz = p * (c - <c, p>)
    * ``logprob`` (f = log pi, REINFORCE form):   dL/dz = c - p * sum(c)   (sum(c) = 0 for the
      mean baseline, kept for exactness)
    """
    if objective == "prob":
        return probs * (c - (c * probs).sum(dim=1, keepdim=True))
    if objective == "logprob":
        return c - probs * c.sum(dim=1, keepdim=True)
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
