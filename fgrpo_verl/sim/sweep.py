"""The sweep over group size N and focal exponent gamma (paper Figure 4), its table and JSON.

``SweepConfig.full()`` is the paper's sweep (N = 2 ... 131,072, gamma in {0, 1}, 4 seeds,
1000 steps); ``SweepConfig.reduced()`` is the README's default run, small enough for a laptop
CPU yet still showing the concentration zone and gamma's effect.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from fgrpo_verl.sim.policy import OBJECTIVES, CategoricalSetup, Objective
from fgrpo_verl.sim.runner import CategoricalRun, CellHistory, OptimizerSettings
from fgrpo_verl.sim.validation import require_gamma, require_int

PAPER_GROUP_SIZES: tuple[int, ...] = tuple(2**k for k in range(1, 18))  # 2 ... 131,072
REDUCED_GROUP_SIZES: tuple[int, ...] = (2, 8, 32, 128, 512, 2048, 8192, 32768, 131072)


@dataclass(frozen=True)
class SweepConfig:
    group_sizes: tuple[int, ...] = REDUCED_GROUP_SIZES
    gammas: tuple[float, ...] = (0.0, 1.0)
    seeds: tuple[int, ...] = (0, 1)
    steps: int = 1000
    setup: CategoricalSetup = field(default_factory=CategoricalSetup)
    optimizer: OptimizerSettings = field(default_factory=OptimizerSettings)
    objective: Objective = "logprob"
    reduced: str = ""  # what was cut relative to the paper's sweep, shown in every output

    def __post_init__(self) -> None:
        if not self.group_sizes:
            raise ValueError("group_sizes must list at least one N")
        for n in self.group_sizes:
            require_int("group size N", n, minimum=1)
        if not self.gammas:
            raise ValueError("gammas must list at least one gamma")
        for gamma in self.gammas:
            require_gamma(gamma)
        if not self.seeds:
            raise ValueError("seeds must list at least one seed")
        require_int("steps", self.steps, minimum=1)
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")

    @classmethod
    def full(cls, **overrides: object) -> SweepConfig:
        return cls(group_sizes=PAPER_GROUP_SIZES, seeds=(0, 1, 2, 3), steps=1000, **overrides)

    @classmethod
    def reduced_default(cls, **overrides: object) -> SweepConfig:
        note = (
            f"reduced from the paper's sweep: N in {list(REDUCED_GROUP_SIZES)} (paper: every power of two "
            f"2..131072), 2 seeds (paper: 4); action space, steps and optimizer as in the paper. "
            f"Run with --full for the paper's sweep."
        )
        return cls(reduced=note, **overrides)

    @property
    def cells(self) -> list[tuple[int, float]]:
        return [(n, g) for n in self.group_sizes for g in self.gammas]

    def to_dict(self) -> dict:
        out = asdict(self)
        out["group_sizes"], out["gammas"], out["seeds"] = list(self.group_sizes), list(self.gammas), list(self.seeds)
        return out


@dataclass
class SweepResult:
    config: SweepConfig
    cells: list[CellHistory]
    seconds: float
    cell_seconds: list[float]
    dtype: str = "float32"

    def cell(self, group_size: int, gamma: float) -> CellHistory:
        for c in self.cells:
            if c.group_size == group_size and c.gamma == gamma:
                return c
        raise KeyError(f"no cell N={group_size}, gamma={gamma}")

    def summary_rows(self) -> list[dict]:
        """One row per (N, gamma): final and worst metrics, averaged over seeds (std across seeds)."""
        rows = []
        for c in self.cells:
            final_q, final_m = c.q_pos[:, -1], c.m_ret[:, -1]
            rows.append(
                {
                    "group_size": c.group_size,
                    "gamma": c.gamma,
                    "q_pos_initial": float(c.q_pos[:, 0].mean()),
                    "q_pos_final": float(final_q.mean()),
                    "q_pos_final_std": float(final_q.std(unbiased=False)),
                    "m_ret_final": float(final_m.mean()),
                    "m_ret_final_std": float(final_m.std(unbiased=False)),
                    "m_ret_min": float(c.m_ret.mean(dim=0).min()),
                    "anchor_prob_final": float(c.anchor_prob[:, -1].mean()),
                    "mean_focal_weight": float(c.focal_weight.mean()),
                }
            )
        return rows

    def table(self) -> str:
        header = (
            f"{'N':>7} {'gamma':>5} {'Q_pos 0->T':>15} {'M_ret(T)':>14} {'min M_ret':>9} "
            f"{'anchor p(T)':>11} {'mean g':>7}"
        )
        lines = [header, "-" * len(header)]
        for r in self.summary_rows():
            lines.append(
                f"{r['group_size']:>7} {r['gamma']:>5g} {r['q_pos_initial']:>6.3f} -> {r['q_pos_final']:.3f} "
                f"{r['m_ret_final']:>7.3f}+-{r['m_ret_final_std']:.3f} {r['m_ret_min']:>9.3f} "
                f"{r['anchor_prob_final']:>11.4f} {r['mean_focal_weight']:>7.3f}"
            )
        return "\n".join(lines)

    def to_json(self, record_every: int | None = None) -> dict:
        """Config, summary and seed-mean trajectories (every ``record_every`` steps, plus the last)."""
        steps = self.config.steps
        every = record_every or max(1, steps // 200)
        idx = sorted({*range(0, steps + 1, every), steps})
        cells = []
        for c in self.cells:
            cells.append(
                {
                    "group_size": c.group_size,
                    "gamma": c.gamma,
                    "seeds": c.seeds,
                    "q_pos_final_per_seed": c.q_pos[:, -1].tolist(),
                    "m_ret_final_per_seed": c.m_ret[:, -1].tolist(),
                    "q_pos_mean": c.q_pos.mean(dim=0)[idx].tolist(),
                    "m_ret_mean": c.m_ret.mean(dim=0)[idx].tolist(),
                    "anchor_prob_mean": c.anchor_prob.mean(dim=0)[idx].tolist(),
                }
            )
        return {
            "config": self.config.to_dict(),
            "dtype": self.dtype,
            "wall_seconds": self.seconds,
            "cell_seconds": self.cell_seconds,
            "steps_recorded": idx,
            "summary": self.summary_rows(),
            "cells": cells,
        }

    def save_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1))


def findings(result: SweepResult) -> list[str]:
    """The paper's three qualitative claims, checked on this run's numbers (True/False, not asserted)."""
    rows = result.summary_rows()
    gammas = sorted({r["gamma"] for r in rows})
    base = sorted((r for r in rows if r["gamma"] == gammas[0]), key=lambda r: r["group_size"])
    lines = []
    rising = [r["group_size"] for r in rows if r["q_pos_final"] <= r["q_pos_initial"]]
    lines.append("Q_pos rises for every N: " + ("yes" if not rising else f"NO (not for N = {sorted(set(rising))})"))
    if len(base) >= 3:
        worst = min(base, key=lambda r: r["m_ret_final"])
        ends = (base[0], base[-1])
        dip = worst["m_ret_final"] < min(e["m_ret_final"] for e in ends)
        lines.append(
            f"Concentration zone (gamma={gammas[0]:g}): M_ret is lowest at N = {worst['group_size']} "
            f"({worst['m_ret_final']:.3f}) vs {ends[0]['m_ret_final']:.3f} at N = {ends[0]['group_size']} and "
            f"{ends[1]['m_ret_final']:.3f} at N = {ends[1]['group_size']}: "
            + ("non-monotonic, as in the paper" if dip else "no interior dip in this run")
        )
    for gamma in gammas[1:]:
        gains = []
        for r in base:
            other = next(o for o in rows if o["gamma"] == gamma and o["group_size"] == r["group_size"])
            gains.append((other["m_ret_final"] - r["m_ret_final"], r["group_size"], r, other))
        best = max(gains, key=lambda x: x[0])
        lines.append(
            f"gamma={gamma:g} vs {gammas[0]:g}: largest M_ret gain at N = {best[1]} "
            f"({best[2]['m_ret_final']:.3f} -> {best[3]['m_ret_final']:.3f}); "
            f"M_ret raised at {sum(g[0] > 0 for g in gains)}/{len(gains)} group sizes"
        )
    return lines


def run_sweep(
    config: SweepConfig,
    progress: bool = True,
    dtype: torch.dtype = torch.float32,
    on_record: Callable[[int, CellHistory], None] | None = None,
) -> SweepResult:
    """Run every (N, gamma) cell (seeds batched) with a progress bar over all steps.

    ``on_record`` sees every cell's state after each update (see :meth:`CategoricalRun.run`).
    """
    from tqdm import tqdm

    start = time.perf_counter()
    cells, cell_seconds = [], []
    total = len(config.cells) * config.steps
    with tqdm(total=total, disable=not progress, unit="step", desc="simulate", dynamic_ncols=True) as bar:
        for n, gamma in config.cells:
            bar.set_postfix_str(f"N={n} gamma={gamma:g}")
            cell_start = time.perf_counter()
            run = CategoricalRun(config.setup, n, gamma, config.seeds, config.optimizer, config.objective, dtype)
            cells.append(run.run(config.steps, on_step=lambda: bar.update(1), on_record=on_record))
            cell_seconds.append(time.perf_counter() - cell_start)
    return SweepResult(config, cells, time.perf_counter() - start, cell_seconds, str(dtype).removeprefix("torch."))


def parse_group_sizes(text: str) -> tuple[int, ...]:
    """'2,8,32' or a power-of-two range '2..131072'."""
    text = text.strip()
    try:
        if ".." in text:
            lo, hi = (int(x) for x in text.split(".."))
            if lo < 1 or hi < lo:
                raise ValueError
            return tuple(2**k for k in range(math.ceil(math.log2(lo)), int(math.log2(hi)) + 1))
        return tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise ValueError(
            f"--group-sizes must be a comma list of integers >= 1 ('2,8,32') or a power-of-two range "
            f"('2..131072'), got {text!r}"
        ) from None


def parse_floats(name: str, text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{name} must be a comma list of numbers, got {text!r}") from None


def seeds_from(count: int, first: int = 0) -> Sequence[int]:
    require_int("seeds", count, minimum=1)
    return tuple(range(first, first + count))
