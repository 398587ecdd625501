#!/usr/bin/env python3
"""Benchmark the telemetry: per-step cost next to the estimator's own time, memory, scrape latency.

    PYTHONPATH=$PWD python scripts/bench_telemetry.py [--responses 32768] [--group-size 16] \
        [--response-len 512] [--prompts 1000000] [--repeats 15]

Baseline in the same run: ``compute_focal_advantage`` without listeners.  Telemetry cost:
the same call with the telemetry listener (step statistics, tracker update over a tracker
already holding ``--prompts`` prompts, Prometheus state), plus the trainer hook's
identity bookkeeping for the step's prompts.  Scrapes go over real HTTP on loopback.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import urllib.request
import uuid

import numpy as np
import torch


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _median_ms(fn, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=32768)
    parser.add_argument("--group-size", type=int, default=16)
    parser.add_argument("--response-len", type=int, default=512)
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--scrapes", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)

    from fgrpo_verl import estimator
    from fgrpo_verl.settings import parse_settings
    from fgrpo_verl.telemetry import hub as hub_module
    from fgrpo_verl.telemetry.exporter import Exporter
    from fgrpo_verl.telemetry.identity import prompt_keys
    from fgrpo_verl.telemetry.options import TelemetryOptions
    from fgrpo_verl.telemetry.tracker import PromptTracker

    groups = args.responses // args.group_size
    rng = np.random.default_rng(0)
    settings = parse_settings({"gamma": 0.5})

    # --- tracker memory: fill with --prompts prompts in 4 data sources
    gc.collect()
    rss0 = _rss_bytes()
    t0 = time.perf_counter()
    tracker = PromptTracker(capacity=args.prompts)
    ds_ids = [tracker.data_source_id(n) for n in ("math", "gsm8k", "code", "ifeval")]
    # keys as the trainer hook computes them: data_source + extra_info.index
    all_keys = prompt_keys(["math"] * args.prompts, ({"index": i} for i in range(args.prompts)), None)
    chunk = 100_000
    for i in range(0, args.prompts, chunk):
        k = all_keys[i : i + chunk]
        tracker.update(k, np.asarray(ds_ids)[np.arange(k.shape[0]) % 4], rng.integers(0, 17, k.shape[0]) / 16, 1)
    fill_s = time.perf_counter() - t0
    gc.collect()
    rss_tracker = _rss_bytes() - rss0

    hub = hub_module.TelemetryHub(TelemetryOptions(tracker_capacity=args.prompts))
    hub.tracker = tracker
    hub._configured = True

    # --- one step's batch: `groups` prompts already tracked, fresh uids
    def make_batch():
        pick = rng.choice(args.prompts, size=groups, replace=False)
        uids = [str(uuid.uuid4()) for _ in range(groups)]
        correct = rng.random((groups, args.group_size)) < rng.random((groups, 1))
        rewards = torch.zeros(args.responses, args.response_len)
        rewards[:, -1] = torch.from_numpy(correct.reshape(-1).astype(np.float32))
        index = np.repeat(np.asarray(uids, dtype=object), args.group_size)
        return pick, uids, rewards, index

    pick, uids, rewards, index = make_batch()
    mask = torch.ones_like(rewards)

    def remember():
        # the trainer hook: keys from (data_source, extra_info.index), as _fetch_one_gen_batch does
        hub.remember_prompts(uids, ["math"] * groups, [{"index": int(p)} for p in pick], None)

    def bare():
        estimator.compute_focal_advantage(rewards, mask, index=index, settings=settings)

    def with_listener():
        estimator.add_step_listener(hub.on_step)
        try:
            estimator.compute_focal_advantage(rewards, mask, index=index, settings=settings)
        finally:
            estimator.remove_step_listener(hub.on_step)

    def listener_only(step=[]):  # noqa: B006 -- reuse one FocalStep
        if not step:
            captured = []
            estimator.add_step_listener(captured.append)
            estimator.compute_focal_advantage(rewards, mask, index=index, settings=settings)
            estimator.remove_step_listener(captured.append)
            step.append(captured[0])
        hub.on_step(step[0])

    remember()
    bare()
    with_listener()  # warm-up
    # interleaved, so the machine's load drifts equally over both
    bare_ms, with_ms = [], []
    for _ in range(args.repeats):
        for fn, out in ((bare, bare_ms), (with_listener, with_ms)):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1000)
    bare_ms.sort()
    with_ms.sort()
    t_bare, t_bare90 = statistics.median(bare_ms), bare_ms[int(0.9 * (len(bare_ms) - 1))]
    t_with, t_with90 = statistics.median(with_ms), with_ms[int(0.9 * (len(with_ms) - 1))]
    t_listener, t_listener90 = _median_ms(listener_only, args.repeats)
    t_remember, t_remember90 = _median_ms(remember, args.repeats)
    tracked_before = tracker.size
    evictions_before = tracker.evictions

    # eviction: a step of entirely new prompts into a full tracker (amortised over capacity/20 new prompts)
    new = rng.integers(1, 2**63, size=groups, dtype=np.uint64)
    t0 = time.perf_counter()
    tracker.update(new, np.zeros(groups, np.int64), np.full(groups, 0.5), 3)
    evict_ms = (time.perf_counter() - t0) * 1000

    # --- scrape latency and size over real HTTP on loopback
    options = TelemetryOptions(port=1, addr="127.0.0.1")
    exporter = Exporter(options, hub.metrics_state)
    exporter._serve(0)
    url = f"http://127.0.0.1:{exporter.port}/metrics"

    def scrape():
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.read()

    body = scrape()
    s_med, s_p90 = _median_ms(scrape, args.scrapes)
    exporter.stop()
    small_state = hub_module.TelemetryHub(TelemetryOptions(tracker_capacity=16))
    small_state._configured = True
    small_state.remember_prompts(uids, ["math"] * groups, [{"index": int(p)} for p in pick], None)
    small_state.on_step(listener_only.__defaults__[0][0])
    exporter = Exporter(options, small_state.metrics_state)
    exporter._serve(0)
    with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=10) as resp:
        small_body = resp.read()
    exporter.stop()

    telemetry = t_listener + t_remember
    print(
        f"batch: {args.responses} responses = {groups} groups x {args.group_size}, response_len {args.response_len}; "
        f"tracker: {tracked_before} prompts (evictions during timing: {evictions_before}), 4 data sources; "
        "torch threads 1"
    )
    rows = [
        ("estimator alone (baseline)", t_bare, t_bare90, ""),
        ("estimator + telemetry listener", t_with, t_with90, f"{100 * (t_with - t_bare) / t_bare:.1f}% over baseline"),
        ("telemetry listener alone", t_listener, t_listener90, f"{100 * t_listener / t_bare:.1f}% of baseline"),
        (
            "trainer hook: remember prompt ids",
            t_remember,
            t_remember90,
            f"{100 * t_remember / t_bare:.1f}% of baseline",
        ),
        ("telemetry total per step", telemetry, float("nan"), f"{100 * telemetry / t_bare:.1f}% of baseline"),
        ("step with eviction (every ~5% new)", evict_ms, float("nan"), "tracker.update only, once per capacity/20"),
        ("GET /metrics (loopback)", s_med, s_p90, f"{len(body)} bytes"),
    ]
    print(f"{'measurement':40s} {'median ms':>10s} {'p90 ms':>8s}  note")
    for name, med, p90, note in rows:
        print(f"{name:40s} {med:10.2f} {p90:8.2f}  {note}")
    print(
        f"tracker arrays: {tracker.nbytes() / tracker.size:.1f} bytes/prompt ({tracker.nbytes() / 2**20:.1f} MiB); "
        f"RSS growth while filling: {rss_tracker / tracker.size:.1f} bytes/prompt; fill {fill_s:.1f} s"
    )
    print(
        f"/metrics size: {len(body)} bytes with {tracked_before} tracked prompts, {len(small_body)} bytes with "
        f"{small_state.tracker.size}"
    )


if __name__ == "__main__":
    main()
