"""Compose and validate a full verl config on CPU, exactly as ``python -m verl.trainer.main_ppo`` would.

Used by ``fgrpo-verl check-config``, the recipes' dry runs and the tests: Hydra composes
verl's own ``ppo_trainer.yaml`` with the user's overrides, then verl's ``validate_config``
(wrapped by the plugin to also check ``algorithm.focal``) runs. Nothing here needs a GPU.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from omegaconf import DictConfig


def verl_config_dir() -> str:
    import verl.trainer

    return os.path.join(os.path.dirname(verl.trainer.__file__), "config")


def compose_verl_config(overrides: Sequence[str], config_name: str = "ppo_trainer") -> DictConfig:
    """Hydra-compose verl's trainer config with command-line style overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        return compose(config_name=config_name, overrides=list(overrides))


def validate_verl_config(config: DictConfig) -> None:
    """Run verl's start-up validation (the same call ``main_ppo.main`` makes)."""
    import verl  # noqa: F401  -- loads the plugin, which extends validate_config
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils import config as verl_config_module

    verl_config_module.validate_config(
        config=config,
        use_reference_policy=need_reference_policy(config),
        use_critic=need_critic(config),
    )
