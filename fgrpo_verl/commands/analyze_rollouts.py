"""``fgrpo-verl analyze-rollouts DIR``: per-prompt success report from verl's rollout dumps.

Reads the ``<step>.jsonl`` files verl writes under ``trainer.rollout_data_dir`` and writes
into ``--out`` (default ``DIR/analysis``): ``steps.csv`` (the online ``fgrpo/*`` statistics,
recomputed), ``prompts.csv`` (one row per prompt, forgotten ones first), and three plots:
``success_rate_heatmap.png``, ``forgotten_prompts.png``, ``pass_at_k_proxy.png``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from fgrpo_verl.commands.arg_types import finite_float, focal_gamma

STEP_COLUMNS = (
    "step",
    "fgrpo/groups/total",
    "fgrpo/groups/all_correct",
    "fgrpo/groups/all_wrong",
    "fgrpo/groups/mixed",
    "fgrpo/pass_at_1",
    "fgrpo/focal_weight/mean",
    "fgrpo/signal_kept",
    "fgrpo/prompts/tracked",
    "fgrpo/prompts/ever_solved",
    "fgrpo/prompts/forgotten",
    "fgrpo/prompts/pass_at_1_proxy",
    "fgrpo/prompts/pass_at_8_proxy",
    "fgrpo/prompts/pass_at_64_proxy",
    "fgrpo/prompts/pass_at_256_proxy",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze-rollouts",
        help="per-prompt success, forgotten prompts and pass@k proxy from trainer.rollout_data_dir dumps",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("directory", type=Path, help="the trainer.rollout_data_dir of a run (files <step>.jsonl)")
    p.add_argument("--out", type=Path, default=None, help="output directory (default DIR/analysis)")
    p.add_argument(
        "--rewards",
        choices=("binary", "signed", "fraction"),
        default="binary",
        help="reward scheme of the run, as algorithm.focal.rewards (sets the success threshold)",
    )
    p.add_argument(
        "--success-threshold", type=finite_float, default=None, help="a response is correct iff score >= this"
    )
    p.add_argument(
        "--gamma", type=focal_gamma, default=0.5, help="focal exponent for the weight statistics (default 0.5)"
    )
    p.add_argument("--data-source-field", default=None, help="dump field holding the data_source, if any")
    p.add_argument("--no-plots", action="store_true", help="write the CSV tables only")
    p.set_defaults(func=run)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _plots(analysis, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fgrpo_verl.telemetry.step_stats import RATE_BUCKETS

    steps = [int(r["step"]) for r in analysis.steps]
    written = []

    fig, ax = plt.subplots(figsize=(9, 4.5))
    image = ax.imshow(analysis.heatmap.T, aspect="auto", origin="lower", cmap="viridis", interpolation="nearest")
    ax.set_yticks(range(len(RATE_BUCKETS)), [f"<= {b:g}" for b in RATE_BUCKETS])
    ticks = list(range(0, len(steps), max(1, len(steps) // 10)))
    ax.set_xticks(ticks, [str(steps[i]) for i in ticks])
    ax.set_xlabel("training step")
    ax.set_ylabel("group success rate mu_hat")
    ax.set_title("Share of prompt groups per success-rate bucket")
    fig.colorbar(image, ax=ax, label="share of groups")
    fig.tight_layout()
    written.append(out / "success_rate_heatmap.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 4))
    for key, label in (
        ("fgrpo/prompts/forgotten", "forgotten (solved before, 0 now)"),
        ("fgrpo/prompts/ever_solved", "ever solved"),
        ("fgrpo/prompts/solved_now", "solved at latest visit"),
    ):
        ax.plot(steps, [r[key] for r in analysis.steps], marker=".", label=label)
    ax.set_xlabel("training step")
    ax.set_ylabel("prompts")
    ax.set_title("Forgotten prompts")
    ax.legend()
    fig.tight_layout()
    written.append(out / "forgotten_prompts.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot(steps, [r.get("fgrpo/pass_at_1", float("nan")) for r in analysis.steps], "k--", label="batch pass@1")
    for k in analysis.tracker.ks:
        ax.plot(steps, [r[f"fgrpo/prompts/pass_at_{k}_proxy"] for r in analysis.steps], label=f"pass@{k} proxy")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("training step")
    ax.set_ylabel("ratio")
    ax.set_title("Training-set pass@k proxy: mean over prompts of 1 - (1 - mu_hat)^k")
    ax.legend()
    fig.tight_layout()
    written.append(out / "pass_at_k_proxy.png")
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)
    return written


def run(args: argparse.Namespace) -> int:
    from fgrpo_verl.settings import FocalConfigError, resolve_threshold
    from fgrpo_verl.telemetry.rollout_dumps import RolloutDumpError, analyze, prompt_rows

    if not args.directory.is_dir():
        print(f"analyze-rollouts: {args.directory} is not a directory", file=sys.stderr)
        return 2
    try:
        threshold = (
            args.success_threshold if args.success_threshold is not None else resolve_threshold(args.rewards, 0.0)
        )
        analysis = analyze(args.directory, threshold, gamma=args.gamma, data_source_field=args.data_source_field)
    except (RolloutDumpError, FocalConfigError) as exc:
        print(f"analyze-rollouts: {exc}", file=sys.stderr)
        return 2
    out = args.out or args.directory / "analysis"
    out.mkdir(parents=True, exist_ok=True)
    _write_csv(out / "steps.csv", analysis.steps, list(STEP_COLUMNS))
    prompts = sorted(prompt_rows(analysis), key=lambda r: (not r["forgotten"], -float(r["best_success_rate"])))
    _write_csv(out / "prompts.csv", prompts, list(prompts[0]) if prompts else ["prompt_key"])

    short = [c.replace("fgrpo/", "").replace("prompts/", "") for c in STEP_COLUMNS]
    widths = [max(len(s), 8) for s in short]
    print("  ".join(s.rjust(w) for s, w in zip(short, widths, strict=True)))
    for record in analysis.steps:
        cells = [_fmt(record.get(c, float("nan"))) for c in STEP_COLUMNS]
        print("  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)))
    forgotten = [p for p in prompts if p["forgotten"]]
    print(
        f"\n{len(prompts)} prompts over {len(analysis.steps)} steps (success threshold {threshold:g}); "
        f"{len(forgotten)} forgotten"
    )
    for p in forgotten[:10]:
        print(
            f"  forgotten {p['prompt_key']} best {p['best_success_rate']:.3g} history [{p['history']}] "
            f"{p['prompt'][:60]!r}"
        )
    if not args.no_plots and analysis.steps:
        for path in _plots(analysis, out):
            print(f"wrote {path}")
    print(f"wrote {out / 'steps.csv'} and {out / 'prompts.csv'}")
    return 0
