"""``fgrpo-verl tail-miss``: Lemma 3.1's probability that an active group misses a rare solution.

For a prompt solved with probability mu and a rare correct region of mass tau (or rho = tau / mu),
prints Pr(B) for a range of group sizes, its peak, a plain-language reading for your N, and a plot.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from fgrpo_verl.sim.tail_miss import (
        active_probability,
        group_size_below,
        plain_reading,
        rare_mass,
        tail_miss_peak,
        tail_miss_probability,
    )

    try:
        given = args.tau is not None or args.rho is not None
        tau = rare_mass(args.mu, tau=args.tau, rho=args.rho) if given else 6.3e-5
        if args.n < 1:
            raise ValueError(f"--n (your group size N) must be an integer >= 1, got {args.n}")
        tail_miss_probability(args.n, args.mu, tau)  # validates mu, tau
    except ValueError as err:
        print(f"fgrpo-verl tail-miss: error: {err}", file=sys.stderr)
        return 2

    mu = args.mu
    peak = tail_miss_peak(mu, tau)
    safe = group_size_below(mu, tau, 0.1)
    top = max(safe, args.n, 2 * peak.group_size)
    sizes = sorted({2**k for k in range(0, top.bit_length() + 1)} | {args.n, peak.group_size})
    probs = tail_miss_probability(sizes, mu, tau)
    active = active_probability(sizes, mu)
    if args.json:
        print(
            json.dumps(
                {
                    "mu": mu,
                    "tau": tau,
                    "rho": tau / mu,
                    "n": args.n,
                    "probability_at_n": tail_miss_probability(args.n, mu, tau),
                    "peak": {"n": peak.group_size, "probability": peak.probability},
                    "n_below_10_percent": safe,
                    "table": [
                        {"n": n, "probability": float(p), "active": float(a)}
                        for n, p, a in zip(sizes, probs, active, strict=True)
                    ],
                },
                indent=1,
            )
        )
    else:
        print(f"Lemma 3.1, mu = {mu:g}, tau = {tau:.4g} (rho = tau / mu = {tau / mu:.4g})")
        print(f"{'N':>9} {'Pr(active)':>11} {'Pr(B)':>9}  Pr(B) = active group with no rare draw")
        for n, p, a in zip(sizes, probs, active, strict=True):
            marks = " <- peak" if n == peak.group_size else ""
            marks += " <- your N" if n == args.n else ""
            print(f"{n:>9} {a:>11.4f} {p:>9.4g}{marks}")
        print()
        print(plain_reading(args.n, mu, tau))
    if not args.no_plot:
        from fgrpo_verl.sim.plots import plot_tail_miss

        path = plot_tail_miss(mu, tau, Path(args.plot), mark_n=args.n)
        print(f"\nPlot: {path}", file=sys.stderr if args.json else sys.stdout)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tail-miss",
        help="Lemma 3.1: probability a mixed-reward group misses a rare correct solution, vs N",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument(
        "--mu",
        type=float,
        default=0.64,
        help="success rate of the prompt, in (0, 1) (default 0.64, the simulation's Q_pos)",
    )
    rare = parser.add_mutually_exclusive_group()
    rare.add_argument("--tau", type=float, help="mass of the rare correct region, 0 < tau < mu (default 6.3e-5)")
    rare.add_argument("--rho", type=float, help="rare share of the correct mass, tau / mu, in (0, 1)")
    parser.add_argument("--n", type=int, default=8, help="your group size N (default 8)")
    parser.add_argument("--plot", default="outputs/tail_miss.png", help="PNG path (default outputs/tail_miss.png)")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    parser.set_defaults(func=run)
