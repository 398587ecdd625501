"""The telemetry of one training process: estimator listener, tracker, logger metrics, endpoint.

verl calls the estimator in its driver process (the V1 trainer's ``_compute_advantage``),
where the trainer, its ``Tracking`` logger and its checkpoints also live.  One
:class:`TelemetryHub` per process ties them together:

* :meth:`on_step` is the estimator's step listener: per-step statistics, tracker update,
  Prometheus state, and the ``fgrpo/*`` scalars waiting for verl's logger;
* the trainer hooks (:mod:`fgrpo_verl.telemetry.trainer`) feed it prompt identities
  (:meth:`remember_prompts`), take the waiting scalars (:meth:`drain_logger_metrics`) and
  save/restore the tracker with verl's checkpoints.

Nothing here raises into training: the estimator's listener wrapper logs any exception.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from fgrpo_verl.telemetry.exporter import Exporter, MetricsState
from fgrpo_verl.telemetry.identity import UNKNOWN_DATA_SOURCE, IdentityBook, prompt_keys
from fgrpo_verl.telemetry.options import TelemetryConfigError, TelemetryOptions, parse_options
from fgrpo_verl.telemetry.step_stats import StepStats, compute_step_stats, logger_metrics
from fgrpo_verl.telemetry.tracker import PromptTracker

logger = logging.getLogger(__name__)

STATE_FILE = "fgrpo_telemetry.npz"


class TelemetryHub:
    """Per-process telemetry state (see the module docstring)."""

    def __init__(self, options: TelemetryOptions | None = None):
        self.options = options or TelemetryOptions()
        self.tracker = PromptTracker(self.options.tracker_capacity, self.options.history)
        self.identities = IdentityBook()
        self.metrics_state = MetricsState()
        self.exporter: Exporter | None = None
        self.global_step: int | None = None  # set by the trainer hooks; else counted here
        self._calls = 0
        self._pending: dict[str, float] = {}
        self._lock = threading.Lock()
        self._configured = False
        self._warned_unknown = False
        # data_source names seen by this hub (stable for its life; tracker ids are mapped per step)
        self._sources: list[str] = [UNKNOWN_DATA_SOURCE]
        self._source_index: dict[str, int] = {UNKNOWN_DATA_SOURCE: 0}
        self.last_stats: StepStats | None = None

    # ----------------------------------------------------------- configuration
    def configure(self, metrics_options: Any) -> None:
        """Apply ``algorithm.focal.metrics`` once (later calls with the same options are no-ops)."""
        options = metrics_options if isinstance(metrics_options, TelemetryOptions) else parse_options(metrics_options)
        if self._configured and options == self.options:
            return
        if options.tracker_capacity != self.tracker.capacity or options.history != self.tracker.history_len:
            if self.tracker.size:
                self.tracker = PromptTracker.from_state_dict(self.tracker.state_dict(), options.tracker_capacity)
            else:
                self.tracker = PromptTracker(options.tracker_capacity, options.history)
        self.options = options
        self._configured = True
        if options.endpoint_enabled and self.exporter is None:
            self.start_endpoint()
        pending = _take_pending_validation()
        if pending is not None:
            try:  # a validation round that ran before this hub was configured (val_before_train)
                self.on_validation(pending)
            except Exception:
                logger.exception("fgrpo telemetry: recording an earlier validation round failed; training continues")

    def start_endpoint(self) -> int | None:
        """Start the Prometheus endpoint; a failure is logged and training goes on without it."""
        try:
            self.exporter = Exporter(self.options, self.metrics_state)
            port = self.exporter.start()
            atexit.register(self.close)
            return port
        except Exception:
            logger.exception(
                "fgrpo telemetry: could not start the Prometheus endpoint (algorithm.focal.metrics.*); "
                "training continues without it"
            )
            self.exporter = None
            return None

    def close(self) -> None:
        if self.exporter is not None:
            self.exporter.stop()
            self.exporter = None

    # ---------------------------------------------------------------- identity
    def remember_prompts(
        self, uids: Iterable[Any], data_sources: Iterable[Any], extra_infos: Iterable[Any] | None, prompts: Any
    ) -> None:
        """Record the stable identity of prompts the trainer just handed to the rollout."""
        uids = list(uids)
        data_sources = [str(d) for d in data_sources]
        keys = prompt_keys(data_sources, extra_infos, prompts)
        with self._lock:
            index = self._source_index
            for name in set(data_sources) - index.keys():
                index[name] = len(self._sources)
                self._sources.append(name)
            self.identities.remember(uids, keys, [index[d] for d in data_sources])

    # -------------------------------------------------------------------- step
    def on_step(self, step: Any) -> None:
        """Estimator listener: ``step`` is a :class:`fgrpo_verl.estimator.FocalStep`."""
        if not self._configured:
            try:
                self.configure(step.settings.metrics)
            except TelemetryConfigError as exc:
                logger.error("fgrpo telemetry: %s; the endpoint stays off, training continues", exc)
                self.configure(TelemetryOptions(tracker_capacity=self.tracker.capacity))
        if not self.options.enable:
            return
        try:
            self._on_step(step)
        except Exception:
            with self.metrics_state.lock:
                self.metrics_state.errors += 1
            raise

    def _on_step(self, step: Any) -> None:
        stats = compute_step_stats(step.result, step.settings.gamma)
        self.last_stats = stats
        self._calls += 1
        global_step = self.global_step if self.global_step is not None else self._calls
        uids = np.asarray(step.index, dtype=object)[stats.first_row]
        with self._lock:
            found = self.identities.lookup(uids, missing_source=0)
            sources = list(self._sources)
        keys = found[:, 0]
        known = keys != 0
        to_tracker = np.asarray([self.tracker.data_source_id(n) for n in sources], dtype=np.int64)
        ds_ids = to_tracker[found[:, 1].astype(np.int64)]
        if known.any():
            self.tracker.update(keys[known], ds_ids[known], stats.success_rate[known], global_step)
        elif not self._warned_unknown:
            self._warned_unknown = True
            logger.warning(
                "fgrpo telemetry: no stable prompt identity for this step's groups (the trainer hooks are not "
                "active), so per-prompt tracking is off; step statistics are still recorded. See the README, "
                "section Telemetry."
            )
        self.metrics_state.observe_step(stats, ds_ids, self.tracker.data_sources, global_step)
        summary = self.tracker.summary()
        self.metrics_state.set_tracker(
            {n: s for n, s in summary.items() if s.tracked}, self.tracker.evictions, self.tracker.nbytes()
        )
        scalars = logger_metrics(stats)
        scalars.update(self._tracker_scalars(summary))
        with self._lock:
            self._pending.update(scalars)

    def _tracker_scalars(self, summary: dict[str, Any]) -> dict[str, float]:
        live = {n: s for n, s in summary.items() if s.tracked}
        if not live:
            return {}
        out: dict[str, float] = {}
        scopes: list[tuple[str, list[Any]]] = [("fgrpo/prompts", list(live.values()))]
        if len(live) > 1:
            scopes += [(f"fgrpo/{name}/prompts", [s]) for name, s in live.items()]
        for prefix, parts in scopes:
            tracked = sum(p.tracked for p in parts)
            out[f"{prefix}/tracked"] = float(tracked)
            out[f"{prefix}/ever_solved"] = float(sum(p.ever_solved for p in parts))
            out[f"{prefix}/solved_now"] = float(sum(p.solved_now for p in parts))
            out[f"{prefix}/forgotten"] = float(sum(p.forgotten for p in parts))
            for k in self.tracker.ks:
                total = sum(p.pass_at_k[k] * p.tracked for p in parts)
                out[f"{prefix}/pass_at_{k}_proxy"] = total / tracked
        return out

    def drain_logger_metrics(self) -> dict[str, float]:
        """The ``fgrpo/*`` scalars computed since the last call (for verl's ``metrics`` dict)."""
        with self._lock:
            out, self._pending = self._pending, {}
        return out

    def on_validation(self, result: Any) -> None:
        """Validation listener: ``result`` is a :class:`fgrpo_verl.evaluation.verl_validation.ValidationPassAtK`.

        Errors are counted here and logged by the caller; validation goes on.
        """
        if not self.options.enable or not result.pass_at_k:
            return
        try:
            self.metrics_state.set_validation(result.pass_at_k, result.problems, result.samples_per_problem)
        except Exception:
            with self.metrics_state.lock:
                self.metrics_state.errors += 1
            raise

    def observe_verl_metrics(self, data: dict[str, Any], step: int) -> None:
        """Mirror verl's core scalars (a fixed list) onto the endpoint."""
        self.metrics_state.set_verl_scalars(data)

    # -------------------------------------------------------------- checkpoint
    def save_state(self, directory: str) -> str:
        """Write the tracker into ``directory`` (a verl ``global_step_N`` folder); returns the file path."""
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, STATE_FILE)
        tmp = path + ".tmp.npz"
        np.savez(tmp, **self.tracker.state_dict())
        os.replace(tmp, path)
        return path

    def load_state(self, directory: str) -> bool:
        """Restore the tracker from ``directory``; False (and a warning) when the checkpoint has none."""
        path = os.path.join(directory, STATE_FILE)
        if not os.path.exists(path):
            logger.warning("fgrpo telemetry: %s has no %s; prompt tracking starts empty", directory, STATE_FILE)
            return False
        with np.load(path, allow_pickle=False) as data:
            state = {name: data[name] for name in data.files}
        self.tracker = PromptTracker.from_state_dict(state, self.options.tracker_capacity)
        summary = self.tracker.summary()
        self.metrics_state.set_tracker(
            {n: s for n, s in summary.items() if s.tracked}, self.tracker.evictions, self.tracker.nbytes()
        )
        return True


_HUB: TelemetryHub | None = None
_HUB_LOCK = threading.Lock()
# The last validation round seen while no configured hub existed (see on_validation).
_PENDING_VALIDATION: Any = None


def discard_pending_validation() -> None:
    """Forget a kept validation round (a new run starts; see :func:`on_validation`)."""
    _take_pending_validation()


def _take_pending_validation() -> Any:
    global _PENDING_VALIDATION
    with _HUB_LOCK:
        pending, _PENDING_VALIDATION = _PENDING_VALIDATION, None
    return pending


def get_hub() -> TelemetryHub:
    """The process's hub (created on first use)."""
    global _HUB
    with _HUB_LOCK:
        if _HUB is None:
            _HUB = TelemetryHub()
        return _HUB


def reset_hub() -> None:
    """Close and forget the process's hub (tests, or a second training run in one process)."""
    global _HUB, _PENDING_VALIDATION
    with _HUB_LOCK:
        if _HUB is not None:
            _HUB.close()
        _HUB = None
        _PENDING_VALIDATION = None


def on_step(step: Any) -> None:
    """The listener registered with the estimator."""
    get_hub().on_step(step)


def on_validation(result: Any) -> None:
    """The listener registered with verl's validation metrics (unbiased pass@k).

    Every verl run validates through here, focal or not, so this never creates a hub: only a hub
    that a focal run has configured (trainer hooks at start-up, else the first estimator step)
    records the round.  Until then the latest round is only kept, and recorded on configuration.
    """
    global _PENDING_VALIDATION
    with _HUB_LOCK:
        hub = _HUB if _HUB is not None and _HUB._configured else None
        if hub is None:
            _PENDING_VALIDATION = result
            return
    hub.on_validation(result)
