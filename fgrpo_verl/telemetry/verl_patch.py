"""The one patch of verl the telemetry needs: its built-in V1 trainers get the telemetry hooks.

Why a patch: verl selects the trainer class by ``trainer.v1.trainer_mode`` from
``TRAINER_REGISTRY``; ``register_trainer`` refuses to re-register a taken name.  Asking
users to switch ``trainer_mode`` to a plugin-specific name would break the contract that
one override (``+algorithm.focal.metrics.port=...``) turns telemetry on and nothing else
changes -- and verl branches on the mode *name* (any name other than ``sync`` gets the
async replay buffer and async prompt submission), so a renamed sync trainer would not
even train the same way.  So, when ``verl.trainer.ppo.v1`` is imported, the registry
entries ``sync``, ``colocate_async`` and ``separate_async`` are replaced by subclasses
adding :class:`~fgrpo_verl.telemetry.trainer.FocalTelemetryTrainerMixin` (which does
nothing unless ``algorithm.adv_estimator=focal_grpo``).  Set
``FGRPO_VERL_TRAINER_HOOKS=0`` to leave verl's registry untouched (step statistics and
the endpoint still work; per-prompt tracking and the ``fgrpo/*`` logger keys need the
hooks).

``tests/telemetry/test_telemetry_verl_patch.py`` fails loudly if verl moves the registry, the
trainer names or the signatures of the hooked methods.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import os
import sys
from typing import Any

logger = logging.getLogger(__name__)

TARGET_MODULE = "verl.trainer.ppo.v1"
BUILTIN_MODES = ("sync", "colocate_async", "separate_async")
# Hooked PPOTrainer methods and the parameters verl calls them with.
HOOKED_METHODS: dict[str, tuple[str, ...]] = {
    "__init__": ("self", "config"),
    "_fetch_one_gen_batch": ("self",),
    "_compute_advantage": ("self", "batch", "metrics"),
    "on_train_begin": ("self",),
    "fit": ("self", "agent_loop_manager"),
    "_save_checkpoint": ("self",),
    "_load_checkpoint": ("self",),
}
ENV_SWITCH = "FGRPO_VERL_TRAINER_HOOKS"


def hooks_enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").lower() not in ("0", "false", "no", "off")


def wrap_registered_trainers(module: Any) -> list[str]:
    """Replace the built-in modes in ``module``'s trainer registry; returns the modes wrapped."""
    from fgrpo_verl.telemetry.trainer import with_telemetry

    registry = module.trainer_base.TRAINER_REGISTRY
    wrapped = []
    for mode in BUILTIN_MODES:
        cls = registry.get(mode)
        if cls is None:
            logger.warning("fgrpo telemetry: verl has no trainer_mode %r; its trainer is not hooked", mode)
            continue
        registry[mode] = with_telemetry(cls)
        wrapped.append(mode)
    return wrapped


class _PostImportLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader):
        self.inner = inner

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:  # type: ignore[no-untyped-def]
        self.inner.exec_module(module)
        try:
            wrap_registered_trainers(module)
        except Exception:
            logger.exception("fgrpo telemetry: could not hook verl's trainers; per-prompt tracking is off")


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Runs :func:`wrap_registered_trainers` right after ``verl.trainer.ppo.v1`` is executed."""

    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name != TARGET_MODULE:
            return None
        sys.meta_path.remove(self)  # resolve the real spec without finding ourselves again
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PostImportLoader(spec.loader)
        return spec


def install() -> None:
    """Hook verl's trainers now if their module is loaded, else as soon as it is imported."""
    if not hooks_enabled():
        return
    module = sys.modules.get(TARGET_MODULE)
    if module is not None and hasattr(module, "trainer_base"):
        wrap_registered_trainers(module)
        return
    if not any(isinstance(f, _PostImportFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PostImportFinder())
