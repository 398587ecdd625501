"""``fgrpo-verl <command>``: the project's command-line tools.

Each command lives in its own module exposing ``register(subparsers)``; the module is only
imported when its command list is built, so ``fgrpo-verl --help`` stays light.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Modules that contribute sub-commands (each defines ``register(subparsers)``).
COMMAND_MODULES: tuple[str, ...] = (
    "fgrpo_verl.commands.demo_estimator",
    "fgrpo_verl.commands.check_config",
    "fgrpo_verl.commands.eval_passk",
    "fgrpo_verl.commands.dry_run",
    "fgrpo_verl.commands.analyze_rollouts",
    "fgrpo_verl.commands.simulate",
    "fgrpo_verl.commands.tail_miss",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fgrpo-verl", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
