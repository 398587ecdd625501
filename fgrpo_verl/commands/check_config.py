"""``fgrpo-verl check-config OVERRIDE ...``: compose verl's config with overrides and validate it on CPU."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from fgrpo_verl.plugin import PluginLoadError
    from fgrpo_verl.settings import FocalConfigError
    from fgrpo_verl.startup_check import validate_focal_config
    from fgrpo_verl.verl_config import compose_verl_config, validate_verl_config

    try:
        config = compose_verl_config(args.overrides, config_name=args.config_name)
        validate_verl_config(config)
        settings = validate_focal_config(config)
    except (
        FocalConfigError,
        PluginLoadError,
        HydraException,
        OmegaConfBaseException,
        AssertionError,
        ValueError,
    ) as exc:
        print(f"config rejected: {exc}", file=sys.stderr)
        return 2
    print(f"config OK: algorithm.adv_estimator={config.algorithm.adv_estimator}")
    if settings is not None:
        print(
            f"focal: gamma={settings.gamma} base={settings.base} rewards={settings.rewards} "
            f"success_threshold={settings.success_threshold} overlong_penalty={settings.overlong_penalty}"
        )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check-config", help="compose and validate a verl config with overrides (CPU)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as given to verl.trainer.main_ppo")
    parser.add_argument("--config-name", default="ppo_trainer", help="verl config name (default ppo_trainer)")
    parser.set_defaults(func=run)
