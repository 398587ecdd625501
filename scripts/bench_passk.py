#!/usr/bin/env python
"""Benchmark of the pass@k tools at the paper's scale (n = 1024, k <= 256), with baselines from the same run.

    PYTHONPATH=. python scripts/bench_passk.py [--problems 500] [--repeats 3]

Rows:
  estimator     pass@k for every problem x k in 1..256 (log-space, vectorised)
                vs exact big-integer math.comb per (problem, k) (the textbook formula, no overflow in Python)
  bootstrap     bootstrap_ci, 2000 resamples over problems
  subsampling   paired_subsample_test, m = 256, 1000 resamples, problems resampled
  scoring       (--scoring N) score_file on N math samples with reward_fns through its batch API
                vs a plain loop of reward_fns.compute_score calls (one sample at a time)
  validation    verl's process_validation_metrics on a validation set (n = 16 per prompt)
                vs the unbiased pass@k the plugin adds to it (its whole overhead)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fgrpo_verl.evaluation.passk import default_ks, pass_at_k_curve
from fgrpo_verl.evaluation.stats import bootstrap_ci, paired_subsample_test


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def exact_curve(n: np.ndarray, c: np.ndarray, ks: list[int]) -> np.ndarray:
    out = np.empty((len(ks), n.size))
    for j, (ni, ci) in enumerate(zip(n.tolist(), c.tolist(), strict=True)):
        for i, k in enumerate(ks):
            out[i, j] = 1 - math.comb(ni - ci, k) / math.comb(ni, k)
    return out


def bench_scoring(count: int, rng: np.random.Generator) -> list[tuple[str, float, str]]:
    import json
    import tempfile

    from fgrpo_verl.evaluation.scoring import score_file

    answers = ["204", "\\frac{1}{2}", "\\sqrt{2}/2", "3\\pi", "(1, 2]"]
    responses = ["\\boxed{204}", "\\boxed{0.5}", "\\boxed{\\frac{\\sqrt{2}}{2}}", "\\boxed{3\\pi}", "\\boxed{(1,2]}"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        samples = Path(tmp) / "samples.jsonl"
        with samples.open("w") as out:
            for i in range(count):
                j = int(rng.integers(len(answers)))
                response = "... so " + (responses[j] if rng.random() < 0.6 else "\\boxed{7}")
                record = {"problem_id": f"math500/{i // 16}", "data_source": "math500", "sample_index": i % 16}
                out.write(json.dumps(record | {"response": response, "ground_truth": answers[j]}) + "\n")
        import reward_fns

        lines = [json.loads(line) for line in samples.read_text().splitlines()]
        start = time.perf_counter()
        for r in lines:
            reward_fns.compute_score(r["data_source"], r["response"], r["ground_truth"])
        loop = time.perf_counter() - start  # also warms reward_fns' pool for the timed run below
        start = time.perf_counter()
        summary = score_file(samples, Path(tmp) / "scores.jsonl")
        batch = time.perf_counter() - start
        assert summary.scored == count
        rows.append((f"score {count} math samples (batch API)", batch, f"{count / batch:.0f} samples/s"))
        rows.append(("  baseline: loop of compute_score calls", loop, f"{count / loop:.0f} samples/s"))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-verl", action="store_true", help="skip the verl validation rows")
    parser.add_argument("--scoring", type=int, default=0, help="also time scoring of this many samples")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    problems, n_samples, ks = args.problems, 1024, default_ks(256)
    rates = rng.beta(0.3, 1.5, size=problems)
    n = np.full(problems, n_samples)
    c_a = rng.binomial(n_samples, rates)
    c_b = rng.binomial(n_samples, np.clip(rates * 0.9, 0, 1))

    rows = []
    fast = best_of(args.repeats, lambda: pass_at_k_curve(n, c_a, ks))
    slow = best_of(1, lambda: exact_curve(n, c_a, ks))
    err = np.abs(pass_at_k_curve(n, c_a, ks) - exact_curve(n, c_a, ks)).max()
    rows.append(("estimator (log-space, numpy)", fast, f"max |diff| vs exact {err:.1e}"))
    rows.append(("  baseline: exact math.comb", slow, f"speed-up x{slow / fast:.0f}"))
    rows.append(("bootstrap_ci 2000 resamples", best_of(args.repeats, lambda: bootstrap_ci(n, c_a, ks)), ""))
    rows.append(
        (
            "paired_subsample_test m=256 1000 res.",
            best_of(args.repeats, lambda: paired_subsample_test(n, c_a, n, c_b, ks, m=256, n_resamples=1000)),
            "",
        )
    )

    if args.scoring:
        rows += bench_scoring(args.scoring, rng)

    if not args.skip_verl:
        import verl  # noqa: F401 -- loads the plugin
        from verl.trainer.ppo import metric_utils

        from fgrpo_verl.evaluation.verl_validation import install_validation_passk, validation_pass_at_k

        install_validation_passk()
        original = metric_utils.process_validation_metrics.__fgrpo_verl_original__
        per_prompt = 16
        prompts = min(problems, 200)
        data_sources = ["math500"] * (prompts * per_prompt)
        uids = [f"uid-{i // per_prompt}" for i in range(prompts * per_prompt)]
        acc = (rng.random(prompts * per_prompt) < np.repeat(rates[:prompts], per_prompt)).tolist()
        infos = {"reward": [float(a) for a in acc], "acc": acc}
        base = best_of(1, lambda: original(data_sources, uids, infos))
        added = best_of(args.repeats, lambda: validation_pass_at_k(data_sources, uids, infos))
        rows.append((f"verl process_validation_metrics {prompts}x{per_prompt}", base, "verl's own (best@k bootstrap)"))
        rows.append(("  added unbiased pass@k", added, f"= {100 * added / base:.2f}% of verl's own"))

    print(f"problems={problems} n={n_samples} ks={ks[0]}..{ks[-1]} repeats={args.repeats} (best-of)")
    print(f"{'what':<42} {'seconds':>10}  note")
    for name, seconds, note in rows:
        print(f"{name:<42} {seconds:>10.4f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
