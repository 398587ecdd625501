"""Validate ``algorithm.focal`` inside verl's own start-up check, before any worker starts.

verl has no hook for plugin settings: its entry point ``verl.trainer.main_ppo.main`` calls
``verl.utils.config.validate_config(config, ...)`` in the driver before ``ray.init``.  This
module wraps that one function (the plugin's only patch of verl).  Because verl loads its
plugins inside ``import verl``, the wrapper is in place before ``main_ppo`` binds the name.
``tests/test_startup_check.py`` fails loudly if verl stops calling it this way.
"""

from __future__ import annotations

import functools
from typing import Any

from fgrpo_verl.settings import ESTIMATOR_NAME, FocalSettings, settings_from_algorithm_config

_WRAPPED_MARK = "__fgrpo_verl_wrapped__"


def uses_focal_estimator(config: Any) -> bool:
    try:
        return str(config.algorithm.adv_estimator) == ESTIMATOR_NAME
    except AttributeError:
        return False


def validate_focal_config(config: Any) -> FocalSettings | None:
    """Check the plugin's part of a full verl config; returns the settings when the focal estimator is used.

    Raises:
        FocalConfigError: a setting is invalid (the message names the key and the fix).
        PluginLoadError: the estimator is selected but the plugin failed to load.
    """
    if not uses_focal_estimator(config):
        if config is not None and hasattr(config, "get") and (config.get("algorithm") or {}).get("focal"):
            settings_from_algorithm_config(config.algorithm)  # still reject typos in unused settings
        return None
    from fgrpo_verl import plugin
    from fgrpo_verl.estimator import compute_focal_advantage

    if plugin.LOAD_ERROR:
        raise plugin.PluginLoadError(plugin.LOAD_ERROR)
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    if get_adv_estimator_fn(ESTIMATOR_NAME) is not compute_focal_advantage:
        raise plugin.PluginLoadError(f"algorithm.adv_estimator={ESTIMATOR_NAME} is registered to another function")
    return settings_from_algorithm_config(config.algorithm)


def install_startup_check() -> None:
    """Wrap ``verl.utils.config.validate_config`` so it also validates ``algorithm.focal``."""
    import verl.utils.config as verl_config

    original = verl_config.validate_config
    if getattr(original, _WRAPPED_MARK, False):
        return

    @functools.wraps(original)
    def validate_config(config, *args, **kwargs):
        validate_focal_config(config)
        return original(config, *args, **kwargs)

    setattr(validate_config, _WRAPPED_MARK, True)
    verl_config.validate_config = validate_config
