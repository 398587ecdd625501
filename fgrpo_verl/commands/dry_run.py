"""``fgrpo-verl dry-run OVERRIDE ...``: a recipe's full pre-flight on CPU (what ``DRY_RUN=1`` runs)."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from fgrpo_verl.dryrun import Cluster, DryRunError, Knobs, dry_run, format_report

    try:
        knobs = Knobs.parse(args.knob)
    except ValueError as exc:
        print(f"dry run: {exc}", file=sys.stderr)
        return 2
    cluster = Cluster(args.nnodes, args.gpus_per_node) if args.nnodes is not None else None
    try:
        report = dry_run(
            args.overrides,
            config_name=args.config_name,
            knobs=knobs,
            cluster=cluster,
            sample_rows=args.sample_rows,
        )
    except DryRunError as exc:
        label = f" {args.recipe}" if args.recipe else ""
        print(f"DRY RUN FAILED{label}: the config would not run; fix these before launching:\n{exc}", file=sys.stderr)
        return 2
    header = f"DRY RUN OK{' ' + args.recipe if args.recipe else ''}: verl's config composed and validated (CPU)"
    print(format_report(report, header))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dry-run", help="compose, check and validate a recipe's verl config on CPU; print the key settings"
    )
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as given to verl.trainer.main_ppo")
    parser.add_argument("--config-name", default="ppo_trainer", help="verl config name (default ppo_trainer)")
    parser.add_argument(
        "--knob", action="append", default=[], metavar="NAME=KEY", help="recipe variable NAME sets Hydra KEY"
    )
    parser.add_argument("--nnodes", type=int, default=None, help="nodes in the cluster (checks the node count)")
    parser.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node in the cluster")
    parser.add_argument("--sample-rows", type=int, default=16, help="data rows per file checked against the reward fn")
    parser.add_argument("--recipe", default="", help="recipe name shown in the report")
    parser.set_defaults(func=run)
