"""Train the categorical policy with AdamW for T steps and record Q_pos, M_ret over time.

All seeds of one (N, gamma) cell run together as rows of one logit matrix: AdamW is
element-wise, so rows never interact, and each row has its own sampling generator.

A step is four calls: ``torch.softmax``, the compiled metrics + sampler and gradient loops of
:mod:`fgrpo_verl.sim.kernels`, and torch's fused AdamW kernel.  The focal weight g is computed
per step by :func:`fgrpo_verl.focal.focal_weight`, the estimator's own function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fgrpo_verl.focal import focal_weight
from fgrpo_verl.sim import kernels
from fgrpo_verl.sim.policy import OBJECTIVES, CategoricalSetup, Objective, RunRandomness
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

    def build(self, params: torch.Tensor) -> FusedAdamW:
        """The update CategoricalRun uses: torch's fused AdamW kernel, called without the optimizer wrapper."""
        return FusedAdamW(params, self)

    def build_torch(self, params: torch.Tensor) -> torch.optim.AdamW:
        """The same settings as a ``torch.optim.AdamW`` (the reference the fast path is tested against)."""
        return torch.optim.AdamW(
            [params],
            lr=self.lr,
            betas=(self.beta1, self.beta2),
            eps=self.eps,
            weight_decay=self.weight_decay,
            foreach=False,
            fused=True,  # one CPU kernel over all |A| x seeds logits
        )


class FusedAdamW:
    """``torch.optim.AdamW(fused=True)``'s own kernel on one tensor, minus the wrapper's per-call Python
    (hooks, state lookup, profiling), which costs more than the kernel itself at |A| = 128,000.
    Same arithmetic: the results equal ``torch.optim.AdamW(..., fused=True)`` bit for bit (tested)."""

    def __init__(self, params: torch.Tensor, settings: OptimizerSettings) -> None:
        self.params, self.settings = params, settings
        self.exp_avg = torch.zeros_like(params)
        self.exp_avg_sq = torch.zeros_like(params)
        self.state_step = torch.zeros((), dtype=torch.float32)
        self.steps_taken = 0
        self._arrays = (params.numpy(), self.exp_avg.numpy(), self.exp_avg_sq.numpy())  # views, for the compiled path

    def step_and_softmax(
        self,
        grad: np.ndarray,
        probs: np.ndarray,
        shift: np.ndarray,
        scratch: np.ndarray,
        chunk_masses: np.ndarray,
        block_masses: np.ndarray,
    ) -> None:
        """float32 only: the same update as :meth:`step` from ``grad`` in a compiled loop, followed by
        ``probs <- softmax(params)`` and the sampler's chunk/block sums of it
        (see :func:`kernels.adamw_then_softmax`); one call instead of several."""
        s = self.settings
        self.steps_taken += 1
        params, exp_avg, exp_avg_sq = self._arrays
        kernels.adamw_then_softmax(
            params,
            exp_avg,
            exp_avg_sq,
            grad,
            probs,
            shift,
            scratch,
            chunk_masses,
            block_masses,
            self.steps_taken,
            s.lr,
            s.beta1,
            s.beta2,
            s.eps,
            s.weight_decay,
        )

    def step(self) -> None:
        if self.params.grad is None:
            raise ValueError("FusedAdamW.step() needs params.grad")
        s = self.settings
        self.steps_taken += 1  # torch.optim.AdamW increments the step before calling the kernel
        self.state_step.fill_(self.steps_taken)
        torch._fused_adamw_(
            [self.params],
            [self.params.grad],
            [self.exp_avg],
            [self.exp_avg_sq],
            [],
            [self.state_step],
            lr=s.lr,
            beta1=s.beta1,
            beta2=s.beta2,
            weight_decay=s.weight_decay,
            eps=s.eps,
            amsgrad=False,
            maximize=False,
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
        self.initial_correct = self.initial_probs[:, : setup.num_correct].contiguous()
        self.logits.grad = torch.zeros_like(self.logits)  # -dL/dz, rewritten in place every step
        self._grad = self.logits.grad.numpy()  # NumPy views for the compiled loops (same memory)
        self._initial_correct = self.initial_correct.numpy()
        self._draws = np.empty((len(self.seeds), group_size), dtype=np.int64)
        self._previous = np.empty_like(self._draws)  # logprob: last step's draws, where grad is nonzero
        self._nothing_stale = np.empty((len(self.seeds), 0), dtype=np.int64)
        self._has_stale = False
        self._stats = np.empty((len(self.seeds), kernels.NUM_STATS))
        self._spacings = np.empty((len(self.seeds), group_size + 1))
        # float32: AdamW and the next softmax in one compiled call (float64 keeps torch's kernels).
        self._compiled_update = dtype == torch.float32
        self._shift = self.logits.max(dim=1).values.double().numpy().copy()
        self._scratch = np.empty(setup.num_actions, dtype=np.int32)
        self._chunks, self._blocks = kernels.mass_buffers(len(self.seeds), setup.num_actions)
        self._no_spacings = np.empty((len(self.seeds), 0))

    def _measure(self, probs: np.ndarray, draw: bool, masses_ready: bool = False) -> np.ndarray:
        """Metrics of ``probs`` (stats columns of :mod:`kernels`) and, if ``draw``, this step's sorted draws."""
        spacings = self._no_spacings
        if draw:
            spacings = self._spacings
            for row, stream in zip(spacings, self.streams, strict=True):
                stream.numpy.standard_exponential(out=row)
        kernels.measure_and_draw(
            probs, self._initial_correct, spacings, self._draws, self._stats, self._chunks, self._blocks, masses_ready
        )
        return self._stats

    def _gradient(self, probs: np.ndarray, stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """-dL/dz from this step's draws into ``logits.grad``; returns (mu_hat, g) per run (float64)."""
        n, setup = self.group_size, self.setup
        mu = stats[:, kernels.NUM_CORRECT_DRAWS] / n
        weight = focal_weight(torch.from_numpy(mu), self.gamma).numpy()  # Eq. 12, shared with the estimator
        scale = weight * ((setup.reward_correct - setup.reward_wrong) / n)
        coef_correct, coef_wrong = scale * (1.0 - mu), -scale * mu  # c_a / n_a for correct / wrong a
        prob = self.objective == "prob"
        kernels.write_gradient(
            probs,
            self._draws,
            self._previous if self._has_stale else self._nothing_stale,
            coef_correct,
            coef_wrong,
            setup.num_correct,
            prob,
            self._grad,
        )
        if not prob:  # logprob: only these positions are nonzero; clear just them next step
            self._previous, self._draws = self._draws, self._previous
            self._has_stale = True
        return mu, weight

    @torch.no_grad()
    def step(self, probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One AdamW ascent step on L from the current probabilities ``softmax(self.logits)``; returns (mu_hat, g).

        Uses torch's AdamW kernel; :meth:`run` (float32) uses the compiled AdamW + softmax instead.
        """
        p = probs.detach().contiguous().numpy()
        mu_hat, weight = self._gradient(p, self._measure(p, draw=True))
        self.optimizer.step()
        dtype = self.logits.dtype
        return torch.from_numpy(mu_hat).to(dtype), torch.from_numpy(weight).to(dtype)

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
        runs = len(self.seeds)
        dtype = self.logits.dtype
        # NumPy arrays in the logits' dtype; the CellHistory tensors share their memory, so
        # on_record sees the figures as they are filled.
        np_dtype = torch.empty((), dtype=dtype).numpy().dtype
        q_pos, m_ret, anchor = (np.empty((runs, steps + 1), dtype=np_dtype) for _ in range(3))
        mu_hist, g_hist = np.empty((runs, steps), dtype=np_dtype), np.empty((runs, steps), dtype=np_dtype)
        history = CellHistory(
            self.group_size, self.gamma, self.seeds, *map(torch.from_numpy, (q_pos, m_ret, anchor, mu_hist, g_hist))
        )
        with torch.no_grad():
            probs = torch.softmax(self.logits, dim=1)
        probs_array = probs.numpy()
        masses_ready = False
        for t in range(steps + 1):
            stats = self._measure(probs_array, draw=t < steps, masses_ready=masses_ready)
            q_pos[:, t] = stats[:, kernels.Q_POS]
            m_ret[:, t] = stats[:, kernels.M_RET]
            anchor[:, t] = stats[:, kernels.ANCHOR]
            if on_record is not None:
                on_record(t, history)
            if t == steps:
                break
            mu_hist[:, t], g_hist[:, t] = self._gradient(probs_array, stats)
            if self._compiled_update:
                self.optimizer.step_and_softmax(
                    self._grad, probs_array, self._shift, self._scratch, self._chunks, self._blocks
                )  # probs_array <- the new policy, with its chunk and block sums
                masses_ready = True
            else:
                self.optimizer.step()
                with torch.no_grad():
                    probs = torch.softmax(self.logits, dim=1)
                probs_array = probs.numpy()
            if on_step is not None:
                on_step()
        return history
