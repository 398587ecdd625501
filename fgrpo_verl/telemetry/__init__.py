"""Telemetry: per-step focal statistics and per-prompt success tracking, into verl's logger
(``fgrpo/*``) and a Prometheus endpoint (``fgrpo_*``), plus offline analysis of rollout dumps.

:func:`activate` is called by the plugin entry point in every process that imports verl; it
only registers a listener and an import hook, so it costs nothing where no estimator runs.
"""

from __future__ import annotations


def activate() -> None:
    """Listen to the focal estimator and to verl's validation pass@k; hook verl's V1 trainers (:mod:`.verl_patch`)."""
    from fgrpo_verl.estimator import add_step_listener
    from fgrpo_verl.evaluation.verl_validation import add_validation_listener
    from fgrpo_verl.telemetry import hub, verl_patch

    add_step_listener(hub.on_step)
    add_validation_listener(hub.on_validation)
    verl_patch.install()
