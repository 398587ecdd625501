"""Benchmark: focal_grpo against verl's grpo and grpo_vectorized on the same batches.

Timing: for each batch shape one process calls the estimators round-robin (so background load
hits all of them alike) and reports the median per estimator. Memory: each estimator runs once
in a fresh process, and its peak resident memory (ru_maxrss) above the inputs is reported.
``focal_grpo`` runs as users get it, with the telemetry listener on; "alone" removes the listener.

    python scripts/bench_estimator.py                 # 1k, 8k, 32k responses x 2048 tokens, N in {8, 16}
    python scripts/bench_estimator.py --sizes 1024 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

WORKER = r"""
import json, resource, statistics, sys, time
import numpy as np, torch
import verl  # loads the fgrpo_verl plugin (estimator + telemetry listener)
from omegaconf import OmegaConf
from verl.trainer.ppo.core_algos import get_adv_estimator_fn
from fgrpo_verl.estimator import add_step_listener, remove_step_listener
from fgrpo_verl.telemetry import hub

mode, names = sys.argv[1], sys.argv[2].split(",")
batch, group, tokens, repeats, threads = (int(a) for a in sys.argv[3:8])
torch.set_num_threads(threads)
gen = torch.Generator().manual_seed(0)
lengths = torch.randint(1, tokens + 1, (batch,), generator=gen)
mask = (torch.arange(tokens)[None, :] < lengths[:, None]).float()
rewards = torch.zeros(batch, tokens)
rewards[torch.arange(batch), lengths - 1] = torch.randint(0, 2, (batch,), generator=gen).float()
uid = np.array([f"{i // group:08d}-4f1c-uid" for i in range(batch)], dtype=object)
config = OmegaConf.create({"norm_adv_by_std_in_grpo": True, "focal": {"gamma": 0.5}})


def call(name):
    if name == "focal_grpo_alone":
        remove_step_listener(hub.on_step)
        try:
            return get_adv_estimator_fn("focal_grpo")(rewards, mask, index=uid, config=config)
        finally:
            add_step_listener(hub.on_step)
    if name == "focal_grpo":
        return get_adv_estimator_fn(name)(rewards, mask, index=uid, config=config)
    return get_adv_estimator_fn(name)(rewards, mask, index=uid)


base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if mode == "memory":
    call(names[0])
    print(json.dumps({"extra_peak_mib": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_rss) / 1024}))
else:
    for name in names:
        call(name)  # warm-up: lazy imports, config parsing, telemetry set-up
    times = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            start = time.perf_counter()
            call(name)
            times[name].append(time.perf_counter() - start)
    print(json.dumps({name: statistics.median(t) for name, t in times.items()}))
"""

ESTIMATORS = ("grpo", "grpo_vectorized", "focal_grpo_alone", "focal_grpo")


def run_worker(mode: str, names: tuple[str, ...], batch: int, group: int, args: argparse.Namespace) -> dict:
    argv = [mode, ",".join(names), batch, group, args.tokens, args.repeats, args.threads]
    out = subprocess.run([sys.executable, "-c", WORKER, *map(str, argv)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 8192, 32768], help="responses per batch")
    parser.add_argument("--groups", type=int, nargs="+", default=[8, 16], help="rollouts per prompt")
    parser.add_argument("--tokens", type=int, default=2048, help="response length")
    parser.add_argument("--repeats", type=int, default=15, help="round-robin rounds per shape (median)")
    # One thread by default: on a shared 2-core box a second OpenMP thread mostly adds scheduling noise.
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()

    print(f"response length {args.tokens}, median of {args.repeats} interleaved rounds, {args.threads} torch thread(s)")
    print(
        "| responses | N | grpo s | grpo_vectorized s | focal alone s | focal + telemetry s | alone / vectorized "
        "| focal + telemetry / vectorized | grpo / focal + telemetry | extra peak MiB: vectorized / focal "
        "| one (B,T) float32 MiB |"
    )
    print("|" + "---|" * 11)
    for batch in args.sizes:
        for group in args.groups:
            t = run_worker("time", ESTIMATORS, batch, group, args)
            mem = {name: run_worker("memory", (name,), batch, group, args)["extra_peak_mib"] for name in ESTIMATORS}
            vec, alone, focal = t["grpo_vectorized"], t["focal_grpo_alone"], t["focal_grpo"]
            print(
                f"| {batch} | {group} | {t['grpo']:.4f} | {vec:.4f} | {alone:.4f} | {focal:.4f} "
                f"| {alone / vec:.2f}x | {focal / vec:.2f}x | {t['grpo'] / focal:.1f}x "
                f"| {mem['grpo_vectorized']:.0f} / {mem['focal_grpo']:.0f} | {batch * args.tokens * 4 / 2**20:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
