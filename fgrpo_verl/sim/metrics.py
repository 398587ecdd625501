"""``simulate --metrics-port``: the simulation's figures on the telemetry's Prometheus endpoint.

The simulation is served through the same exporter, metric families and prompt tracker a
training run uses (:mod:`fgrpo_verl.telemetry`), so the Grafana dashboard can be tried on CPU:

* one ``data_source`` per sweep cell, ``simulation/N=<N>/gamma=<gamma>`` (bounded by the sweep);
* one prompt group per seed per update: its N draws, their success rate mu_hat (Eq. 11) and
  focal weight g (Eq. 12) feed ``fgrpo_group_success_ratio``, ``fgrpo_focal_weight_ratio``,
  ``fgrpo_groups_total``, ``fgrpo_responses_total``, ``fgrpo_batch_pass_at_1_ratio`` (sampled
  share of correct draws), ``fgrpo_signal_kept_ratio``;
* each seed's run is one tracked prompt (``fgrpo_tracked_prompts``, ``..._forgotten``,
  ``fgrpo_pass_at_k_proxy_ratio`` from its latest mu_hat, as in training);
* ``fgrpo_training_steps_total`` counts updates over all cells; ``fgrpo_global_step`` is the
  update within the running cell and ``fgrpo_focal_gamma`` its gamma;
* the quantities only a simulation knows, as ``fgrpo_sim_*`` gauges (mean over seeds):
  Q_pos (total correct probability: the policy's exact pass@1, of which the batch pass@1 is the
  sampled estimate), M_ret (retained positive mass), the anchor's probability, updates done.

A failure while publishing is logged once and counted in ``fgrpo_telemetry_errors_total``;
the simulation goes on.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator

import numpy as np
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from fgrpo_verl.sim.runner import CellHistory
from fgrpo_verl.telemetry.exporter import Exporter, MetricsState
from fgrpo_verl.telemetry.options import TelemetryOptions
from fgrpo_verl.telemetry.step_stats import StepStats
from fgrpo_verl.telemetry.tracker import MAX_DATA_SOURCES, PromptTracker

logger = logging.getLogger(__name__)

# The tracker gives one slot to "other"; every cell must keep its own label.
MAX_CELLS = MAX_DATA_SOURCES - 1


def cell_label(group_size: int, gamma: float) -> str:
    """The ``data_source`` label of one sweep cell."""
    return f"simulation/N={group_size}/gamma={gamma:g}"


def _prompt_key(label: str, seed: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{label}/seed={seed}".encode(), digest_size=8).digest(), "little")


class _SimulationCollector(Collector):
    """Renders the ``fgrpo_sim_*`` gauges at scrape time."""

    def __init__(self, owner: SimulationMetrics):
        self.owner = owner

    def collect(self) -> Iterator[Metric]:
        labels = ["data_source"]
        families = {
            "q_pos": GaugeMetricFamily(
                "fgrpo_sim_correct_mass_ratio",
                "Q_pos: total probability of the correct actions (the policy's exact pass@1), mean over seeds.",
                labels=labels,
            ),
            "m_ret": GaugeMetricFamily(
                "fgrpo_sim_retained_positive_mass_ratio",
                "M_ret: 1 - correct probability lost since the start / initial correct probability, mean over seeds.",
                labels=labels,
            ),
            "anchor": GaugeMetricFamily(
                "fgrpo_sim_anchor_probability_ratio",
                "Probability of the anchor action, mean over seeds.",
                labels=labels,
            ),
            "step": GaugeMetricFamily("fgrpo_sim_cell_steps", "Updates done in this sweep cell.", labels=labels),
        }
        with self.owner.lock:
            figures = dict(self.owner.figures)
        for name, values in sorted(figures.items()):
            for key, family in families.items():
                family.add_metric([name], values[key])
        yield from families.values()


class SimulationMetrics:
    """The endpoint of one ``simulate`` run; :meth:`observe` is the sweep's ``on_record`` callback."""

    def __init__(self, port: int, addr: str = "127.0.0.1", prompts: int = 1):
        self.options = TelemetryOptions(port=port, addr=addr)
        self.state = MetricsState()
        self.tracker = PromptTracker(capacity=max(1, prompts))
        self.lock = threading.Lock()
        self.figures: dict[str, dict[str, float]] = {}
        self.exporter = Exporter(self.options, self.state, port_option="--metrics-port")
        self.exporter.registry.register(_SimulationCollector(self))
        self._failed = False
        self._keys: dict[str, np.ndarray] = {}  # tracker keys of each cell's seeds

    def start(self) -> int:
        """Serve ``/metrics``; returns the port (a taken port falls back to a free one, logged)."""
        return self.exporter.start()

    def close(self) -> None:
        self.exporter.stop()

    def observe(self, t: int, history: CellHistory) -> None:
        """Publish the state after ``t`` updates of one cell; never raises into the simulation."""
        try:
            self._observe(t, history)
        except Exception:
            with self.state.lock:
                self.state.errors += 1
            if not self._failed:
                self._failed = True
                logger.exception("simulate --metrics-port: publishing failed; the simulation continues")

    def _observe(self, t: int, history: CellHistory) -> None:
        label = cell_label(history.group_size, history.gamma)
        if t > 0:
            self._observe_update(t, history, label)
        figures = {
            "q_pos": float(history.q_pos[:, t].mean()),
            "m_ret": float(history.m_ret[:, t].mean()),
            "anchor": float(history.anchor_prob[:, t].mean()),
            "step": float(t),
        }
        with self.lock:
            self.figures[label] = figures

    def _observe_update(self, t: int, history: CellHistory, label: str) -> None:
        """Fold the groups of update t - 1 (one per seed) into the training-run families."""
        n = history.group_size
        seeds = len(history.seeds)
        correct = np.rint(history.success_rate[:, t - 1].double().numpy() * n).astype(np.int64)
        mu = correct / n
        weight = history.focal_weight[:, t - 1].double().numpy()
        # Rewards +1 / -1 with the group-mean baseline: |A| = 2(1 - mu) per correct draw, 2 mu per wrong one.
        abs_base = 4.0 * n * mu * (1.0 - mu)
        stats = StepStats(
            success_rate=mu,
            weight=weight,
            size=np.full(seeds, n, np.int64),
            correct=correct,
            abs_focal=weight * abs_base,
            abs_base=abs_base,
            first_row=np.arange(seeds, dtype=np.int64),
            gamma=float(history.gamma),
        )
        ds = self.tracker.data_source_id(label)
        keys = self._keys.get(label)
        if keys is None:
            keys = self._keys[label] = np.asarray([_prompt_key(label, s) for s in history.seeds], np.uint64)
        self.tracker.update(keys, np.full(seeds, ds, np.int64), mu, t)
        self.state.observe_step(stats, np.zeros(seeds, np.int64), [label], t)
        summary = self.tracker.summary()
        self.state.set_tracker(
            {name: s for name, s in summary.items() if s.tracked}, self.tracker.evictions, self.tracker.nbytes()
        )
