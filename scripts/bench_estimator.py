"""Benchmark: focal_grpo against verl's grpo and grpo_vectorized on the same batches.

Each (estimator, batch size, group size) runs in a fresh subprocess so that its peak resident
memory (ru_maxrss) above the inputs can be read; time is the median of several calls.

    python scripts/bench_estimator.py                 # 1k, 8k, 32k responses x 2048 tokens, N in {8, 16}
    python scripts/bench_estimator.py --sizes 1024 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

WORKER = r"""
import json, resource, statistics, sys, time
import numpy as np, torch
import verl  # loads the fgrpo_verl plugin
from omegaconf import OmegaConf
from verl.trainer.ppo.core_algos import get_adv_estimator_fn

name = sys.argv[1]
batch, group, tokens, repeats = (int(a) for a in sys.argv[2:6])
torch.set_num_threads(int(sys.argv[6]))
gen = torch.Generator().manual_seed(0)
lengths = torch.randint(1, tokens + 1, (batch,), generator=gen)
mask = (torch.arange(tokens)[None, :] < lengths[:, None]).float()
rewards = torch.zeros(batch, tokens)
rewards[torch.arange(batch), lengths - 1] = torch.randint(0, 2, (batch,), generator=gen).float()
uid = np.array([f"{i // group:08d}-4f1c-uid" for i in range(batch)], dtype=object)
config = OmegaConf.create({"norm_adv_by_std_in_grpo": True, "focal": {"gamma": 0.5}})
fn = get_adv_estimator_fn(name)
kwargs = {"config": config} if name == "focal_grpo" else {}
base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
for _ in range(repeats):
    start = time.perf_counter()
    adv, _ = fn(token_level_rewards=rewards, response_mask=mask, index=uid, **kwargs)
    times.append(time.perf_counter() - start)
    del adv, _
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_rss
print(json.dumps({"median_s": statistics.median(times), "extra_peak_mib": peak / 1024}))
"""

ESTIMATORS = ("grpo", "grpo_vectorized", "focal_grpo")


def measure(name: str, batch: int, group: int, tokens: int, repeats: int, threads: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, name, str(batch), str(group), str(tokens), str(repeats), str(threads)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 8192, 32768], help="responses per batch")
    parser.add_argument("--groups", type=int, nargs="+", default=[8, 16], help="rollouts per prompt")
    parser.add_argument("--tokens", type=int, default=2048, help="response length")
    parser.add_argument("--repeats", type=int, default=5, help="calls per measurement (median)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()

    tensor_mib = lambda batch: batch * args.tokens * 4 / 2**20  # noqa: E731 -- one float32 (B, T) tensor
    print(f"response length {args.tokens}, median of {args.repeats} calls, {args.threads} torch threads")
    header = (
        "| responses | N | grpo s | grpo_vectorized s | focal_grpo s | focal / vectorized | grpo / focal "
        "| extra peak MiB (vectorized / focal) | one (B,T) tensor MiB |"
    )
    print(header)
    print("|" + "---|" * 9)
    for batch in args.sizes:
        for group in args.groups:
            r = {name: measure(name, batch, group, args.tokens, args.repeats, args.threads) for name in ESTIMATORS}
            t = {name: r[name]["median_s"] for name in ESTIMATORS}
            print(
                f"| {batch} | {group} | {t['grpo']:.4f} | {t['grpo_vectorized']:.4f} | {t['focal_grpo']:.4f} "
                f"| {t['focal_grpo'] / t['grpo_vectorized']:.2f}x | {t['grpo'] / t['focal_grpo']:.1f}x "
                f"| {r['grpo_vectorized']['extra_peak_mib']:.0f} / {r['focal_grpo']['extra_peak_mib']:.0f} "
                f"| {tensor_mib(batch):.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
