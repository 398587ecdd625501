"""PNG figures in the manner of the paper's Figure 4, and the Lemma 3.1 curve (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fgrpo_verl.sim.sweep import SweepResult
from fgrpo_verl.sim.tail_miss import tail_miss_peak, tail_miss_probability


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # headless: CI and clusters have no display
    import matplotlib.pyplot as plt

    return plt


def plot_trajectories(result: SweepResult, path: Path) -> Path:
    """Q_pos(t) and M_ret(t), one line per N (colour), one column per gamma."""
    plt = _pyplot()
    gammas = list(result.config.gammas)
    sizes = list(result.config.group_sizes)
    colours = plt.cm.viridis(np.linspace(0.0, 0.95, len(sizes)))
    fig, axes = plt.subplots(2, len(gammas), figsize=(5.2 * len(gammas), 7.5), squeeze=False, sharex=True)
    steps = np.arange(result.config.steps + 1)
    for col, gamma in enumerate(gammas):
        for colour, n in zip(colours, sizes, strict=True):
            cell = result.cell(n, gamma)
            axes[0, col].plot(steps, cell.q_pos.mean(dim=0).numpy(), color=colour, lw=1.3, label=f"N={n}")
            axes[1, col].plot(steps, cell.m_ret.mean(dim=0).numpy(), color=colour, lw=1.3, label=f"N={n}")
        axes[0, col].set_title(f"gamma = {gamma:g}" + (" (GRPO)" if gamma == 0 else " (F-GRPO)"))
        axes[0, col].set_ylabel("Q_pos (correct mass)")
        axes[1, col].set_ylabel("M_ret (retained positive mass)")
        axes[1, col].set_xlabel("step")
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
    axes[0, -1].legend(fontsize=7, ncol=2, loc="lower right")
    setup, seeds = result.config.setup, len(result.config.seeds)
    fig.suptitle(f"Categorical policy, |A| = {setup.num_actions:,}, mean over {seeds} seeds")
    fig.tight_layout()
    return _save(fig, path, plt)


def plot_final_vs_group_size(result: SweepResult, path: Path) -> Path:
    """Final Q_pos and M_ret against N, one line per gamma (error bars: std over seeds)."""
    plt = _pyplot()
    rows = result.summary_rows()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for gamma in result.config.gammas:
        sel = [r for r in rows if r["gamma"] == gamma]
        n = [r["group_size"] for r in sel]
        label = f"gamma = {gamma:g}" + (" (GRPO)" if gamma == 0 else "")
        axes[0].errorbar(
            n, [r["q_pos_final"] for r in sel], [r["q_pos_final_std"] for r in sel], marker="o", capsize=3, label=label
        )
        axes[1].errorbar(
            n, [r["m_ret_final"] for r in sel], [r["m_ret_final_std"] for r in sel], marker="o", capsize=3, label=label
        )
    q0 = rows[0]["q_pos_initial"]
    axes[0].axhline(q0, color="grey", ls=":", lw=1, label=f"initial Q_pos {q0:.3f}")
    axes[0].set_ylabel(f"Q_pos after {result.config.steps} steps")
    axes[1].set_ylabel(f"M_ret after {result.config.steps} steps")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("group size N")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Final metrics vs group size: the concentration zone and the focal weight's effect")
    fig.tight_layout()
    return _save(fig, path, plt)


def plot_tail_miss(mu: float, tau: float, path: Path, mark_n: int | None = None, max_n: int | None = None) -> Path:
    """Pr(B) of Lemma 3.1 against N (log axis), with its peak and the user's N marked."""
    plt = _pyplot()
    peak = tail_miss_peak(mu, tau)
    top = max_n or max(4 * peak.group_size, int(40.0 / tau), 64)
    n = np.unique(np.round(np.geomspace(1, top, 600)).astype(np.int64))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(n, tail_miss_probability(n, mu, tau), lw=1.8, label=f"mu = {mu:g}, tau = {tau:.3g}")
    ax.plot(
        [peak.group_size],
        [peak.probability],
        "o",
        color="C3",
        label=f"peak N = {peak.group_size} ({peak.probability:.3f})",
    )
    if mark_n is not None:
        p = tail_miss_probability(mark_n, mu, tau)
        ax.plot([mark_n], [p], "s", color="C2", label=f"your N = {mark_n} ({p:.3f})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("group size N")
    ax.set_ylabel("Pr(active group misses the rare region)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Lemma 3.1: (1 - tau)^N - (mu - tau)^N - (1 - mu)^N")
    fig.tight_layout()
    return _save(fig, path, plt)


def _save(fig, path: Path, plt) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
