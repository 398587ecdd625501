"""The ``verl.plugins`` entry point: registers the focal estimator when verl is imported.

verl loads entry points inside ``import verl`` and logs their exceptions at DEBUG only, so
a broken plugin would surface much later as a baffling "Unknown advantage estimator".
This module therefore never raises: it logs an ERROR that says what went wrong and how to
fix it, keeps the reason in :data:`LOAD_ERROR`, and -- where verl's registry is usable --
registers a stand-in under the estimator's name that raises that same explanation, so
verl's start-up check (see :mod:`fgrpo_verl.startup_check`) fails on it before any GPU work.
"""

from __future__ import annotations

import logging
from importlib import metadata

from fgrpo_verl.settings import ESTIMATOR_NAME

logger = logging.getLogger("fgrpo_verl")

# verl's estimator call site, config layout and registry were checked against 0.9.x.
SUPPORTED_VERL = ((0, 9, 1), (0, 10, 0))  # [lower, upper)

LOAD_ERROR: str | None = None


class PluginLoadError(RuntimeError):
    """fgrpo-verl could not install itself into verl."""


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def check_verl_version(version: str) -> None:
    low, high = SUPPORTED_VERL
    if not (low <= _version_tuple(version)[:3] < high):
        raise PluginLoadError(
            f"fgrpo-verl supports verl >={'.'.join(map(str, low))},<{'.'.join(map(str, high))}, "
            f"but verl {version} is installed; install a supported verl, e.g. pip install 'verl==0.9.1'"
        )


def _register_stand_in(reason: str) -> None:
    """Register an estimator that explains the load failure instead of 'Unknown advantage estimator'."""

    def focal_plugin_failed_to_load(*args, **kwargs):
        raise PluginLoadError(reason)

    try:
        from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

        ADV_ESTIMATOR_REGISTRY.setdefault(ESTIMATOR_NAME, focal_plugin_failed_to_load)
    except Exception:  # the registry itself is unusable: the ERROR log is all we can give
        pass


def install() -> None:
    """Register the estimator and the start-up check; raise :class:`PluginLoadError` on failure."""
    check_verl_version(metadata.version("verl"))
    try:
        from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

        from fgrpo_verl.estimator import compute_focal_advantage
        from fgrpo_verl.startup_check import install_startup_check
    except Exception as exc:
        raise PluginLoadError(
            f"fgrpo-verl failed to import its verl glue ({type(exc).__name__}: {exc}); "
            "reinstall with pip install -U fgrpo-verl in the environment that runs verl"
        ) from exc
    holder = ADV_ESTIMATOR_REGISTRY.get(ESTIMATOR_NAME)
    if holder is not None and holder is not compute_focal_advantage:
        raise PluginLoadError(
            f"the advantage estimator name {ESTIMATOR_NAME!r} is already taken by "
            f"{getattr(holder, '__module__', '?')}.{getattr(holder, '__qualname__', holder)}; "
            "uninstall the other package or restrict verl's plugins with VERL_USE_EXTERNAL_PLUGINS"
        )
    register_adv_est(ESTIMATOR_NAME)(compute_focal_advantage)
    install_startup_check()
    # Unbiased pass@k in validation metrics; logs (never raises) if verl's internals moved.
    from fgrpo_verl.evaluation.verl_validation import install_validation_passk

    install_validation_passk()
    try:  # telemetry is optional: the estimator must work even if it cannot start
        from fgrpo_verl.telemetry import activate

        activate()
    except Exception:
        logger.exception("fgrpo-verl telemetry is off (the estimator is unaffected)")


def load() -> None:
    """Entry-point body: :func:`install`, turning any failure into a loud, explained ERROR."""
    global LOAD_ERROR
    try:
        install()
        LOAD_ERROR = None
    except Exception as exc:
        LOAD_ERROR = str(exc)
        logger.error("fgrpo-verl is NOT active: %s", LOAD_ERROR)
        _register_stand_in(LOAD_ERROR)


load()
