"""Prometheus exposition of the telemetry through prometheus-client.

A custom collector renders the hub's aggregates at scrape time, so a training step only
updates numpy arrays and a scrape never waits on training.  Labels are ``data_source``
(plus ``outcome`` / ``k`` / ``name`` from fixed sets): never a prompt id, so the size of
``/metrics`` does not grow with the number of prompts.

The HTTP server is prometheus-client's own (``start_http_server``), with its TLS and
client-certificate options.  A port already in use falls back to a free port chosen by the
OS (logged, and written into the file_sd target so Prometheus still finds it).  Every
failure here is logged and swallowed: telemetry never stops training.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from fgrpo_verl.telemetry.options import TelemetryOptions
from fgrpo_verl.telemetry.step_stats import RATE_BUCKETS, StepStats, signal_kept

logger = logging.getLogger(__name__)

OUTCOMES = ("all_correct", "all_wrong", "mixed")
# verl scalars mirrored onto the endpoint (fixed set: the dashboard's "verl core" row).
VERL_SCALARS = (
    "critic/score/mean",
    "critic/rewards/mean",
    "critic/advantages/mean",
    "actor/entropy",
    "actor/pg_loss",
    "actor/kl_loss",
    "actor/pg_clipfrac",
    "actor/grad_norm",
    "actor/lr",
    "response_length/mean",
    "response_length/clip_ratio",
    "prompt_length/mean",
    "timing_s/step",
    "timing_s/gen",
    "timing_s/adv",
    "perf/throughput",
)


class _SourceCounters:
    """Cumulative counters and last-step gauges of one data_source."""

    def __init__(self) -> None:
        self.rate_buckets = np.zeros(len(RATE_BUCKETS) + 1, np.int64)  # last = above every bound (never for [0,1])
        self.rate_sum = 0.0
        self.weight_buckets = np.zeros(len(RATE_BUCKETS) + 1, np.int64)
        self.weight_sum = 0.0
        self.groups = dict.fromkeys(OUTCOMES, 0)
        self.responses = 0
        self.pass_at_1 = float("nan")
        self.weight_mean = float("nan")
        self.signal_kept = float("nan")


class MetricsState:
    """What ``/metrics`` shows; updated once per step, read by the collector (guarded by one lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sources: dict[str, _SourceCounters] = {}
        self.steps = 0
        self.global_step = 0
        self.last_step_time = time.time()  # the "no step for 15 min" alert counts from start-up
        self.gamma = float("nan")
        self.tracker: dict[str, Any] = {}
        self.evictions = 0
        self.tracker_bytes = 0
        self.errors = 0
        self.verl_scalars: dict[str, float] = {}
        # unbiased pass@k of verl's validation rounds, per validation data_source (last round that had it)
        self.validation_pass_at_k: dict[str, dict[int, float]] = {}
        self.validation_problems: dict[str, int] = {}
        self.validation_samples: dict[str, int] = {}
        self.validation_rounds = 0
        self.last_validation_time = float("nan")

    def observe_step(self, stats: StepStats, group_sources: np.ndarray, source_names: list[str], step: int) -> None:
        """Fold one step into the counters; ``group_sources[g]`` indexes ``source_names``."""
        edges = np.asarray(RATE_BUCKETS)
        rate_bucket = np.searchsorted(edges, stats.success_rate, side="left")
        weight_bucket = np.searchsorted(edges, stats.weight, side="left")
        all_correct, all_wrong, mixed = stats.outcomes()
        nb = len(RATE_BUCKETS) + 1
        with self.lock:
            for ds, name in enumerate(source_names):
                sel = group_sources == ds
                if not sel.any():
                    continue
                c = self.sources.setdefault(name, _SourceCounters())
                c.rate_buckets += np.bincount(rate_bucket[sel], minlength=nb)
                c.weight_buckets += np.bincount(weight_bucket[sel], minlength=nb)
                c.rate_sum += float(stats.success_rate[sel].sum())
                c.weight_sum += float(stats.weight[sel].sum())
                c.groups["all_correct"] += int(all_correct[sel].sum())
                c.groups["all_wrong"] += int(all_wrong[sel].sum())
                c.groups["mixed"] += int(mixed[sel].sum())
                c.responses += int(stats.size[sel].sum())
                c.pass_at_1 = float(stats.correct[sel].sum() / max(int(stats.size[sel].sum()), 1))
                c.weight_mean = float(stats.weight[sel].mean())
                c.signal_kept = signal_kept(stats.abs_focal[sel], stats.abs_base[sel])
            self.steps += 1
            self.global_step = step
            self.last_step_time = time.time()
            self.gamma = stats.gamma

    def set_tracker(self, summary: dict[str, Any], evictions: int, nbytes: int) -> None:
        with self.lock:
            self.tracker = summary
            self.evictions = evictions
            self.tracker_bytes = nbytes

    def set_validation(
        self, pass_at_k: dict[str, dict[int, float]], problems: dict[str, int], samples: dict[str, int]
    ) -> None:
        """Record one validation round (see :class:`fgrpo_verl.evaluation.verl_validation.ValidationPassAtK`)."""
        values = {str(ds): {int(k): float(v) for k, v in per_k.items()} for ds, per_k in pass_at_k.items()}
        with self.lock:
            self.validation_pass_at_k.update(values)
            self.validation_problems.update({str(ds): int(n) for ds, n in problems.items()})
            self.validation_samples.update({str(ds): int(n) for ds, n in samples.items()})
            self.validation_rounds += 1
            self.last_validation_time = time.time()

    def set_verl_scalars(self, data: dict[str, Any]) -> None:
        picked = {}
        for name in VERL_SCALARS:
            value = data.get(name)
            if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                picked[name] = float(value)
        if picked:
            with self.lock:
                self.verl_scalars.update(picked)


class FocalCollector(Collector):
    """Renders :class:`MetricsState` in the Prometheus exposition format."""

    def __init__(self, state: MetricsState):
        self.state = state

    def collect(self) -> Iterator[Metric]:
        s = self.state
        with s.lock:
            yield from self._step_metrics(s)
            yield from self._source_metrics(s)
            yield from self._tracker_metrics(s)
            yield from self._validation_metrics(s)

    @staticmethod
    def _step_metrics(s: MetricsState) -> Iterator[Metric]:
        steps = CounterMetricFamily("fgrpo_training_steps", "Estimator calls (training steps) seen by the exporter.")
        steps.add_metric([], s.steps)
        yield steps
        yield GaugeMetricFamily(
            "fgrpo_last_step_timestamp_seconds", "Unix time of the last training step.", value=s.last_step_time
        )
        yield GaugeMetricFamily("fgrpo_global_step", "verl's global step of the last training step.", s.global_step)
        yield GaugeMetricFamily("fgrpo_focal_gamma", "Focal exponent gamma in use (paper Eq. 12).", value=s.gamma)
        errors = CounterMetricFamily("fgrpo_telemetry_errors", "Telemetry failures (logged; training continued).")
        errors.add_metric([], s.errors)
        yield errors
        verl = GaugeMetricFamily("fgrpo_verl_metric", "verl's core scalars of the last step.", labels=["name"])
        for name, value in sorted(s.verl_scalars.items()):
            verl.add_metric([name], value)
        yield verl

    @staticmethod
    def _source_metrics(s: MetricsState) -> Iterator[Metric]:
        bounds = [*(repr(float(b)) for b in RATE_BUCKETS), "+Inf"]
        rate = HistogramMetricFamily(
            "fgrpo_group_success_ratio", "Group success rate mu_hat per prompt group (Eq. 11).", labels=["data_source"]
        )
        weight = HistogramMetricFamily(
            "fgrpo_focal_weight_ratio",
            "Focal weight g = (1 - mu_hat)^gamma per group (Eq. 12).",
            labels=["data_source"],
        )
        groups = CounterMetricFamily("fgrpo_groups", "Prompt groups by outcome.", labels=["data_source", "outcome"])
        responses = CounterMetricFamily("fgrpo_responses", "Scored responses.", labels=["data_source"])
        pass1 = GaugeMetricFamily(
            "fgrpo_batch_pass_at_1_ratio", "Share of correct responses in the last step.", labels=["data_source"]
        )
        wmean = GaugeMetricFamily(
            "fgrpo_focal_weight_mean_ratio", "Mean focal weight over the last step's groups.", labels=["data_source"]
        )
        kept = GaugeMetricFamily(
            "fgrpo_signal_kept_ratio",
            "sum|g*A| / sum|A| in the last step: learning signal kept by the focal weight.",
            labels=["data_source"],
        )
        for name, c in sorted(s.sources.items()):
            cum_r = np.cumsum(c.rate_buckets)
            cum_w = np.cumsum(c.weight_buckets)
            rate.add_metric([name], list(zip(bounds, cum_r.tolist(), strict=True)), c.rate_sum)
            weight.add_metric([name], list(zip(bounds, cum_w.tolist(), strict=True)), c.weight_sum)
            for outcome in OUTCOMES:
                groups.add_metric([name, outcome], c.groups[outcome])
            responses.add_metric([name], c.responses)
            pass1.add_metric([name], c.pass_at_1)
            wmean.add_metric([name], c.weight_mean)
            kept.add_metric([name], c.signal_kept)
        yield from (rate, weight, groups, responses, pass1, wmean, kept)

    @staticmethod
    def _tracker_metrics(s: MetricsState) -> Iterator[Metric]:
        labels = ["data_source"]
        tracked = GaugeMetricFamily("fgrpo_tracked_prompts", "Prompts in the tracker.", labels=labels)
        ever = GaugeMetricFamily("fgrpo_prompts_ever_solved", "Tracked prompts solved at any visit.", labels=labels)
        now = GaugeMetricFamily(
            "fgrpo_prompts_solved_now", "Tracked prompts solved at their latest visit.", labels=labels
        )
        forgotten = GaugeMetricFamily(
            "fgrpo_prompts_forgotten", "Prompts solved before whose latest success rate is 0.", labels=labels
        )
        events = CounterMetricFamily(
            "fgrpo_prompts_forgotten_events", "Times a solved prompt dropped to success rate 0.", labels=labels
        )
        passk = GaugeMetricFamily(
            "fgrpo_pass_at_k_proxy_ratio",
            "Mean over tracked prompts of 1 - (1 - mu_hat)^k (training-set pass@k proxy).",
            labels=["data_source", "k"],
        )
        for name, summ in sorted(s.tracker.items()):
            tracked.add_metric([name], summ.tracked)
            ever.add_metric([name], summ.ever_solved)
            now.add_metric([name], summ.solved_now)
            forgotten.add_metric([name], summ.forgotten)
            events.add_metric([name], summ.forgotten_events)
            for k, value in summ.pass_at_k.items():
                passk.add_metric([name, str(k)], value)
        evictions = CounterMetricFamily("fgrpo_tracker_evictions", "Prompts evicted from the full tracker.")
        evictions.add_metric([], s.evictions)
        memory = GaugeMetricFamily("fgrpo_tracker_memory_bytes", "Tracker array memory.", value=s.tracker_bytes)
        yield from (tracked, ever, now, forgotten, events, passk, evictions, memory)

    @staticmethod
    def _validation_metrics(s: MetricsState) -> Iterator[Metric]:
        passk = GaugeMetricFamily(
            "fgrpo_validation_pass_at_k_ratio",
            "Unbiased pass@k (Chen et al. 2021) of the last verl validation round, k = 1, 2, 4, ..., n.",
            labels=["data_source", "k"],
        )
        problems = GaugeMetricFamily(
            "fgrpo_validation_problems", "Validation prompts in the last round.", labels=["data_source"]
        )
        samples = GaugeMetricFamily(
            "fgrpo_validation_samples_per_problem",
            "Validation samples per prompt n in the last round (the largest k reported).",
            labels=["data_source"],
        )
        for name, per_k in sorted(s.validation_pass_at_k.items()):
            for k, value in sorted(per_k.items()):
                passk.add_metric([name, str(k)], value)
        for name, count in sorted(s.validation_problems.items()):
            problems.add_metric([name], count)
        for name, count in sorted(s.validation_samples.items()):
            samples.add_metric([name], count)
        rounds = CounterMetricFamily("fgrpo_validation_rounds", "verl validation rounds with unbiased pass@k.")
        rounds.add_metric([], s.validation_rounds)
        last = GaugeMetricFamily(
            "fgrpo_last_validation_timestamp_seconds",
            "Unix time of the last validation round (NaN before the first).",
            value=s.last_validation_time,
        )
        yield from (passk, problems, samples, rounds, last)


def _node_ip() -> str:
    """An address other machines can reach this node on (for the file_sd target)."""
    try:
        import ray

        if ray.is_initialized():
            return ray.util.get_node_ip_address()
    except Exception:  # ray absent or not initialised here
        pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def target_host(addr: str) -> str:
    return _node_ip() if addr in ("0.0.0.0", "::") else addr


def write_file_sd(path: str, target: str, labels: dict[str, str]) -> None:
    """Write a Prometheus file_sd JSON target list atomically (Prometheus may read it at any time)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".fgrpo_sd_", dir=directory)
    with os.fdopen(fd, "w") as f:
        json.dump([{"targets": [target], "labels": labels}], f, indent=2)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


class Exporter:
    """The running HTTP endpoint (owns its registry, server thread and file_sd target)."""

    def __init__(
        self, options: TelemetryOptions, state: MetricsState, port_option: str = "algorithm.focal.metrics.port"
    ):
        self.options = options
        self.port_option = port_option  # named in the log when the port is taken
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(FocalCollector(state))
        self.server = None
        self.thread = None
        self.port: int | None = None
        self.file_sd_written: str | None = None

    def _serve(self, port: int) -> None:
        o = self.options
        self.server, self.thread = start_http_server(
            port,
            addr=o.addr,
            registry=self.registry,
            certfile=o.certfile,
            keyfile=o.keyfile,
            client_cafile=o.client_cafile,
            client_capath=o.client_capath,
            client_auth_required=o.client_auth_required,
        )
        self.port = int(self.server.server_port)

    def start(self) -> int:
        """Start serving; returns the port in use. Raises OSError only if no port at all can be bound."""
        requested = self.options.port
        try:
            self._serve(requested)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            logger.error(
                "fgrpo telemetry: port %s on %s is in use (%s); serving /metrics on a "
                "free port instead -- see the log line below and the file_sd target",
                requested,
                self.options.addr,
                self.port_option,
            )
            self._serve(0)
        scheme = "https" if self.options.tls else "http"
        logger.warning("fgrpo telemetry: serving %s://%s:%s/metrics", scheme, self.options.addr, self.port)
        if self.options.file_sd:
            target = f"{target_host(self.options.addr)}:{self.port}"
            write_file_sd(self.options.file_sd, target, {"job": self.options.job, "__scheme__": scheme})
            self.file_sd_written = self.options.file_sd
        return self.port

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        if self.file_sd_written:
            with contextlib.suppress(OSError):
                os.remove(self.file_sd_written)
            self.file_sd_written = None
