"""``fgrpo-verl simulate``: the paper's categorical policy simulation (section 5.1, Figure 4) on CPU.

A softmax policy over 128,000 actions (10,000 correct) is trained with group-relative updates
for a sweep of group sizes N, with and without the focal weight.  The table, JSON and PNGs show
that total correct mass Q_pos rises for every N while the retained positive mass M_ret collapses
at intermediate N (the "concentration zone"), and that gamma = 1 keeps more of it.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fgrpo_verl.sim.metrics import SimulationMetrics
    from fgrpo_verl.sim.sweep import SweepConfig

DEFAULT_METRICS_ADDR = "127.0.0.1"


def build_config(args: argparse.Namespace):
    from fgrpo_verl.sim.policy import CategoricalSetup
    from fgrpo_verl.sim.runner import OptimizerSettings
    from fgrpo_verl.sim.sweep import SweepConfig, parse_floats, parse_group_sizes, seeds_from

    if args.threads < 1:
        raise ValueError(f"--threads must be an integer >= 1, got {args.threads}")
    setup = CategoricalSetup(num_actions=args.num_actions, num_correct=args.num_correct)
    optimizer = OptimizerSettings(lr=args.lr, weight_decay=args.weight_decay)
    common = {"setup": setup, "optimizer": optimizer, "objective": args.objective}
    config = SweepConfig.full(**common) if args.full else SweepConfig.reduced_default(**common)
    changes: dict = {}
    if args.group_sizes is not None:
        changes["group_sizes"] = parse_group_sizes(args.group_sizes)
    if args.gammas is not None:
        changes["gammas"] = parse_floats("--gammas", args.gammas)
    if args.seeds is not None:
        changes["seeds"] = tuple(seeds_from(args.seeds))
    if args.steps is not None:
        changes["steps"] = args.steps
    default_setup = (args.num_actions, args.num_correct, args.lr, args.weight_decay, args.objective) == (
        128_000,
        10_000,
        1e-2,
        0.0,
        "logprob",
    )
    if changes or not default_setup:
        changes["reduced"] = "custom sweep (command-line overrides); see config in the JSON"
    return replace(config, **changes) if changes else config


def check_metrics_args(args: argparse.Namespace, cells: int) -> None:
    """Validate --metrics-port / --metrics-addr / --metrics-hold (ValueError naming the flag and the fix)."""
    if args.metrics_port is None:
        for flag, value, default in (
            ("--metrics-addr", args.metrics_addr, DEFAULT_METRICS_ADDR),
            ("--metrics-hold", args.metrics_hold, 0.0),
        ):
            if value != default:
                raise ValueError(
                    f"{flag} needs --metrics-port: give the port to serve /metrics on, e.g. --metrics-port 9464"
                )
        return
    if not 1 <= args.metrics_port <= 65535:
        raise ValueError(f"--metrics-port must be a TCP port in [1, 65535], got {args.metrics_port}")
    try:
        ipaddress.ip_address(args.metrics_addr)
    except ValueError:
        raise ValueError(
            f"--metrics-addr must be an IP address (127.0.0.1, 0.0.0.0 for all interfaces), got {args.metrics_addr!r}"
        ) from None
    if not (args.metrics_hold >= 0 and math.isfinite(args.metrics_hold)):
        raise ValueError(f"--metrics-hold must be a number of seconds >= 0, got {args.metrics_hold}")
    from fgrpo_verl.sim.metrics import MAX_CELLS

    if cells > MAX_CELLS:
        raise ValueError(
            f"--metrics-port serves one data_source label per (N, gamma) cell; this sweep has {cells} cells, "
            f"at most {MAX_CELLS} are served: pass fewer --group-sizes or --gammas"
        )


def start_metrics(args: argparse.Namespace, prompts: int) -> SimulationMetrics:
    """The running endpoint, or a ValueError saying why it cannot serve."""
    from fgrpo_verl.sim.metrics import SimulationMetrics

    metrics = SimulationMetrics(args.metrics_port, args.metrics_addr, prompts=prompts)
    try:
        port = metrics.start()
    except OSError as err:
        raise ValueError(
            f"--metrics-port/--metrics-addr: cannot serve on {args.metrics_addr}:{args.metrics_port} ({err})"
        ) from None
    print(f"Serving the simulation's metrics at http://{args.metrics_addr}:{port}/metrics", flush=True)
    return metrics


def hold_metrics(metrics: SimulationMetrics, seconds: float) -> None:
    """Keep serving the final figures for ``seconds`` (Ctrl-C ends the wait early)."""
    if seconds <= 0:
        return
    print(
        f"Holding http://{metrics.options.addr}:{metrics.exporter.port}/metrics for {seconds:g} s "
        "so Prometheus can scrape the final figures (Ctrl-C to stop).",
        flush=True,
    )
    try:
        time.sleep(seconds)
    except KeyboardInterrupt:
        print("Stopped holding the metrics endpoint.", flush=True)


def run(args: argparse.Namespace) -> int:
    try:
        config = build_config(args)
        check_metrics_args(args, len(config.cells))
        metrics = None if args.metrics_port is None else start_metrics(args, len(config.cells) * len(config.seeds))
    except ValueError as err:
        print(f"fgrpo-verl simulate: error: {err}", file=sys.stderr)
        return 2
    try:
        _simulate(args, config, metrics)
        if metrics is not None:
            hold_metrics(metrics, args.metrics_hold)
    finally:
        if metrics is not None:
            metrics.close()
    return 0


def _simulate(args: argparse.Namespace, config: SweepConfig, metrics: SimulationMetrics | None) -> None:
    """Run the sweep (feeding ``metrics`` live when given), print the table and findings, write the files."""
    import torch

    from fgrpo_verl.sim.sweep import findings, run_sweep

    # One thread by default: the per-step tensors (|A| x seeds) are too small to amortise OpenMP
    # hand-offs, and on a shared machine extra threads spin-wait (measured: 2 threads 3-8x slower).
    torch.set_num_threads(args.threads)
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    out = Path(args.output_dir)
    n_cells = len(config.cells)
    print(
        f"Categorical policy: |A| = {config.setup.num_actions:,}, {config.setup.num_correct:,} correct; "
        f"N in {list(config.group_sizes)}; gamma in {list(config.gammas)}; {len(config.seeds)} seed(s); "
        f"{config.steps} steps; AdamW lr {config.optimizer.lr:g}, weight decay {config.optimizer.weight_decay:g}; "
        f"objective {config.objective}; {args.dtype}; {n_cells} cells."
    )
    if config.reduced:
        print(f"Note: {config.reduced}")
    on_record = None if metrics is None else metrics.observe
    result = run_sweep(config, progress=not args.no_progress, dtype=dtype, on_record=on_record)
    print()
    print(result.table())
    print()
    for line in findings(result):
        print(f"* {line}")
    json_path = out / "simulation.json"
    result.save_json(json_path)
    written = [json_path]
    if not args.no_plots:
        from fgrpo_verl.sim.plots import plot_final_vs_group_size, plot_trajectories

        written.append(plot_trajectories(result, out / "trajectories.png"))
        written.append(plot_final_vs_group_size(result, out / "final_vs_group_size.png"))
    print(f"\nWall time {result.seconds:.1f} s. Wrote: " + ", ".join(str(p) for p in written), flush=True)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="categorical policy simulation (paper Fig. 4): Q_pos and M_ret vs N and gamma",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument(
        "--full", action="store_true", help="the paper's sweep: N = 2..131072 (powers of two), 4 seeds, 1000 steps"
    )
    parser.add_argument("--group-sizes", metavar="LIST", help="N values: '2,8,32' or a power-of-two range '2..131072'")
    parser.add_argument("--gammas", metavar="LIST", help="focal exponents, e.g. '0,0.5,1' (default 0,1)")
    parser.add_argument("--seeds", type=int, metavar="K", help="number of seeds 0..K-1 (default 2; --full 4)")
    parser.add_argument("--steps", type=int, help="optimizer steps per run (default 1000)")
    parser.add_argument("--num-actions", type=int, default=128_000, help="|A| (default 128000)")
    parser.add_argument("--num-correct", type=int, default=10_000, help="correct actions (default 10000)")
    parser.add_argument(
        "--objective",
        choices=("logprob", "prob"),
        default="logprob",
        help="surrogate whose gradient is followed: logprob = sum r log pi (GRPO's on-policy "
        "ratio gradient, default); prob = sum r pi (literal probability surrogate)",
    )
    parser.add_argument("--lr", type=float, default=1e-2, help="AdamW learning rate (default 1e-2)")
    parser.add_argument("--weight-decay", type=float, default=0.0, help="AdamW decoupled weight decay (default 0)")
    parser.add_argument(
        "--output-dir", default="outputs/simulate", help="JSON and PNGs go here (default outputs/simulate)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1, fastest here)")
    parser.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default="float32",
        help="logits, optimizer state and metrics precision (default float32)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve the live figures at http://ADDR:PORT/metrics (the telemetry's Prometheus exporter and "
        "fgrpo_* families, one data_source per cell) for the Grafana dashboard",
    )
    parser.add_argument(
        "--metrics-addr",
        default=DEFAULT_METRICS_ADDR,
        metavar="ADDR",
        help=f"bind address of the endpoint (default {DEFAULT_METRICS_ADDR}; 0.0.0.0 for all interfaces)",
    )
    parser.add_argument(
        "--metrics-hold",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep serving the final figures this long after the run (default 0: close at exit; Ctrl-C ends it)",
    )
    parser.set_defaults(func=run)
