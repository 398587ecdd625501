"""Trainer hooks: the bridge between the telemetry hub and verl's V1 ``PPOTrainer``.

The estimator alone sees only verl's per-step ``uid`` and has no access to the step's
``metrics`` dict, the ``Tracking`` logger or checkpoints.  These hooks, mixed into verl's
trainer classes (``register_trainer``'s extension point), supply the rest:

* ``_fetch_one_gen_batch``: verl draws the prompts and assigns fresh uids here, in the
  driver; the hook records uid -> stable prompt key (data_source + extra_info.index, or
  the prompt) while the data set row is still at hand.
* ``_compute_advantage(batch, metrics)``: after verl's own computation (which calls the
  estimator, which feeds the hub), the step's ``fgrpo/*`` scalars go into ``metrics``,
  and from there into every configured logger backend.
* ``on_train_begin``: wraps the ``Tracking`` instance so verl's core scalars are also
  mirrored onto the Prometheus endpoint; ``fit`` closes the endpoint (and its file_sd
  target) when training ends.
* ``_save_checkpoint`` / ``_load_checkpoint``: the tracker is saved as
  ``global_step_N/fgrpo_telemetry.npz`` beside verl's own files and restored on resume.

Every hook calls verl first and never lets a telemetry error escape.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from fgrpo_verl.settings import settings_from_algorithm_config
from fgrpo_verl.startup_check import uses_focal_estimator
from fgrpo_verl.telemetry.hub import TelemetryHub, discard_pending_validation, get_hub
from fgrpo_verl.telemetry.identity import UNKNOWN_DATA_SOURCE
from fgrpo_verl.telemetry.options import parse_options

logger = logging.getLogger(__name__)


class MirroringTracking:
    """verl's ``Tracking`` logger, also handing each logged dict to the telemetry hub."""

    def __init__(self, tracking: Any, hub: TelemetryHub):
        self._tracking = tracking
        self._hub = hub

    def log(self, data: dict, step: int, *args: Any, **kwargs: Any) -> Any:
        result = self._tracking.log(data, step, *args, **kwargs)
        try:
            self._hub.observe_verl_metrics(data, step)
        except Exception:
            logger.exception("fgrpo telemetry: mirroring verl's metrics failed; training continues")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tracking, name)


def _column(batch: Any, name: str, n: int) -> list[Any] | None:
    try:
        if name not in batch.keys():  # noqa: SIM118 -- TensorDict rejects `in` on itself
            return None
        values = list(batch[name])
    except Exception:
        return None
    return values if len(values) == n else None


class FocalTelemetryTrainerMixin:
    """Mix in before a ``PPOTrainer`` subclass: ``class T(FocalTelemetryTrainerMixin, PPOTrainerSync)``."""

    _fgrpo_hub: TelemetryHub | None = None

    def __init__(self, config: Any, *args: Any, **kwargs: Any):
        super().__init__(config, *args, **kwargs)
        self._fgrpo_hub = None
        if not uses_focal_estimator(config):
            return
        options = parse_options(settings_from_algorithm_config(config.algorithm).metrics)
        discard_pending_validation()  # this run has not validated yet: a kept round is an earlier run's
        hub = get_hub()
        # Configured even when off: the estimator's listener then skips every step, also in a process
        # whose hub an earlier run switched on.
        hub.configure(options)
        if options.enable:
            self._fgrpo_hub = hub

    # ---------------------------------------------------------- prompt identity
    def _fetch_one_gen_batch(self) -> Any:
        batch = super()._fetch_one_gen_batch()
        hub = self._fgrpo_hub
        if hub is not None:
            try:
                uids = list(batch["uid"])
                n = len(uids)
                sources = _column(batch, "data_source", n) or [UNKNOWN_DATA_SOURCE] * n
                hub.remember_prompts(uids, sources, _column(batch, "extra_info", n), _column(batch, "raw_prompt", n))
            except Exception:
                logger.exception("fgrpo telemetry: could not read prompt identities; training continues")
        return batch

    # ------------------------------------------------------------ step metrics
    def _compute_advantage(self, batch: Any, metrics: dict) -> Any:
        hub = self._fgrpo_hub
        if hub is not None:
            hub.global_step = int(getattr(self, "global_steps", 0) or 0)
        out = super()._compute_advantage(batch, metrics)
        if hub is not None:
            metrics.update(hub.drain_logger_metrics())
        return out

    def on_train_begin(self) -> None:
        super().on_train_begin()
        hub = self._fgrpo_hub
        tracking = getattr(self, "logger", None)
        if hub is not None and tracking is not None and not isinstance(tracking, MirroringTracking):
            self.logger = MirroringTracking(tracking, hub)

    def fit(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().fit(*args, **kwargs)
        finally:
            # verl's fit returns at the last step without on_train_end: stop serving and remove the
            # file_sd target here, so a finished run is not reported as a down exporter.
            if self._fgrpo_hub is not None:
                self._fgrpo_hub.close()

    # -------------------------------------------------------------- checkpoints
    def _fgrpo_step_folder(self) -> str:
        """The folder verl's ``_save_checkpoint`` writes for the current step."""
        return os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")

    def _fgrpo_resume_folder(self) -> str | None:
        """The folder verl's ``_load_checkpoint`` resumed from (same resolution rules), or None."""
        if not getattr(self, "global_steps", 0):
            return None
        trainer_cfg = self.config.trainer
        if trainer_cfg.resume_mode == "resume_path":
            folder = str(trainer_cfg.resume_from_path)
        else:
            folder = os.path.join(trainer_cfg.default_local_dir, f"global_step_{self.global_steps}")
        return folder if os.path.isabs(folder) else os.path.join(os.getcwd(), folder)

    def _save_checkpoint(self) -> None:
        super()._save_checkpoint()
        if self._fgrpo_hub is not None:
            try:
                self._fgrpo_hub.save_state(self._fgrpo_step_folder())
            except Exception:
                logger.exception("fgrpo telemetry: saving the prompt tracker failed; training continues")

    def _load_checkpoint(self) -> None:
        super()._load_checkpoint()
        if self._fgrpo_hub is None:  # not a focal run, or telemetry off: verl's method only
            return
        folder = self._fgrpo_resume_folder()
        if folder is not None:
            try:
                if self._fgrpo_hub.load_state(folder):
                    logger.info("fgrpo telemetry: prompt tracker restored from %s", folder)
            except Exception:
                logger.exception("fgrpo telemetry: restoring the prompt tracker failed; it starts empty")


def with_telemetry(trainer_cls: type) -> type:
    """A subclass of a verl trainer class with the telemetry hooks (idempotent)."""
    if issubclass(trainer_cls, FocalTelemetryTrainerMixin):
        return trainer_cls
    return type(
        trainer_cls.__name__,
        (FocalTelemetryTrainerMixin, trainer_cls),
        {"__module__": __name__, "__qualname__": trainer_cls.__qualname__, "__doc__": trainer_cls.__doc__},
    )
