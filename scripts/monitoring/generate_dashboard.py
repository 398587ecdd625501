#!/usr/bin/env python3
"""Generate the fgrpo-verl Grafana dashboard (dashboard as code, grafana-foundation-sdk).

    python scripts/monitoring/generate_dashboard.py            # rewrite grafana_dashboard.json
    python scripts/monitoring/generate_dashboard.py --check    # fail if the committed JSON is stale

Every query reads metrics exported by ``fgrpo_verl.telemetry`` (``fgrpo_*``: training steps, verl's
validation pass@k, and ``fgrpo_sim_*`` from ``fgrpo-verl simulate --metrics-port``); the tests
evaluate each expression against a real Prometheus scraping a real exporter (a training run's in
tests/telemetry, the simulation's in tests/sim).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import heatmap, prometheus, timeseries
from grafana_foundation_sdk.builders.common import StackingConfig
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import StackingMode
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

OUTPUT = Path(__file__).with_name("grafana_dashboard.json")
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
SEL = 'data_source=~"$data_source"'
WINDOW = "$__rate_interval"

# (row, title, unit, [(expr, legend)], kind)
PANELS: list[tuple[str, str, str, list[tuple[str, str]], str]] = [
    (
        "Rare solutions (paper: pass@k falls while pass@1 looks fine)",
        "Batch pass@1 vs training-set pass@k proxy",
        "percentunit",
        [
            (f"fgrpo_batch_pass_at_1_ratio{{{SEL}}}", "{{data_source}} batch pass@1"),
            (f"fgrpo_pass_at_k_proxy_ratio{{{SEL}}}", "{{data_source}} pass@{{k}} proxy"),
        ],
        "timeseries",
    ),
    (
        "",
        "Forgotten prompts (solved before, success rate 0 now)",
        "short",
        [
            (f"sum by (data_source) (fgrpo_prompts_forgotten{{{SEL}}})", "{{data_source}} forgotten"),
            (
                f"sum by (data_source) (increase(fgrpo_prompts_forgotten_events_total{{{SEL}}}[{WINDOW}]))",
                "{{data_source}} newly forgotten",
            ),
        ],
        "timeseries",
    ),
    (
        "",
        "Tracked prompts",
        "short",
        [
            (f"sum by (data_source) (fgrpo_tracked_prompts{{{SEL}}})", "{{data_source}} tracked"),
            (f"sum by (data_source) (fgrpo_prompts_ever_solved{{{SEL}}})", "{{data_source}} ever solved"),
            (f"sum by (data_source) (fgrpo_prompts_solved_now{{{SEL}}})", "{{data_source}} solved now"),
        ],
        "timeseries",
    ),
    (
        "Focal weighting",
        "Group success rate mu_hat (heatmap)",
        "short",
        [(f"sum by (le) (increase(fgrpo_group_success_ratio_bucket{{{SEL}}}[{WINDOW}]))", "{{le}}")],
        "heatmap",
    ),
    (
        "",
        "Group outcome mix",
        "short",
        [(f"sum by (outcome) (increase(fgrpo_groups_total{{{SEL}}}[{WINDOW}]))", "{{outcome}}")],
        "stacked",
    ),
    (
        "",
        "Focal weights and learning signal kept",
        "percentunit",
        [
            (f"fgrpo_focal_weight_mean_ratio{{{SEL}}}", "{{data_source}} mean weight"),
            (
                f"histogram_quantile(0.5, sum by (le) (increase(fgrpo_focal_weight_ratio_bucket{{{SEL}}}[{WINDOW}])))",
                "median weight",
            ),
            (f"fgrpo_signal_kept_ratio{{{SEL}}}", "{{data_source}} signal kept"),
            ("max(fgrpo_focal_gamma)", "gamma"),
        ],
        "timeseries",
    ),
    (
        "Validation (unbiased pass@k of verl's validation rounds)",
        "Validation pass@k (unbiased, all validation data sources)",
        "percentunit",
        # not filtered by $data_source: validation sets are usually named apart from the training sets
        [("fgrpo_validation_pass_at_k_ratio", "{{data_source}} pass@{{k}}")],
        "timeseries",
    ),
    (
        "verl core scalars",
        "Reward, score and entropy",
        "short",
        [
            (
                'fgrpo_verl_metric{name=~"critic/score/mean|critic/rewards/mean|actor/entropy|actor/pg_clipfrac"}',
                "{{name}}",
            )
        ],
        "timeseries",
    ),
    (
        "",
        "Response length",
        "short",
        [('fgrpo_verl_metric{name=~"response_length/mean|prompt_length/mean"}', "{{name}}")],
        "timeseries",
    ),
    (
        "",
        "Training pace",
        "s",
        [
            ('fgrpo_verl_metric{name="timing_s/step"}', "step time"),
            ("time() - max(fgrpo_last_step_timestamp_seconds)", "since last step"),
            (f"60 * sum(rate(fgrpo_training_steps_total[{WINDOW}]))", "steps per minute"),
        ],
        "timeseries",
    ),
    (
        "CPU simulation (fgrpo-verl simulate --metrics-port)",
        "Correct mass Q_pos and retained positive mass M_ret (paper Fig. 4)",
        "percentunit",
        [
            (f"fgrpo_sim_correct_mass_ratio{{{SEL}}}", "{{data_source}} Q_pos"),
            (f"fgrpo_sim_retained_positive_mass_ratio{{{SEL}}}", "{{data_source}} M_ret"),
        ],
        "timeseries",
    ),
]


def _targets(panel, queries: list[tuple[str, str]], fmt: PromQueryFormat | None = None):
    for i, (expr, legend) in enumerate(queries):
        q = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(chr(ord("A") + i)).range()
        if fmt is not None:
            q = q.format(fmt)
        panel = panel.with_target(q)
    return panel


def _panel(title: str, unit: str, queries: list[tuple[str, str]], kind: str):
    if kind == "heatmap":
        panel = heatmap.Panel().title(title).datasource(DS).calculate(False).height(9).span(12)
        return _targets(panel, queries, PromQueryFormat.HEATMAP)
    panel = timeseries.Panel().title(title).datasource(DS).unit(unit).height(9).span(12)
    if kind == "stacked":
        panel = panel.stacking(StackingConfig().mode(StackingMode.NORMAL)).fill_opacity(60)
    return _targets(panel, queries)


def build() -> dict:
    """The dashboard as a JSON-ready dict."""
    board = (
        gd.Dashboard("fgrpo-verl: F-GRPO training")
        .uid("fgrpo-verl")
        .description("Per-prompt success, forgotten prompts and focal weights of an F-GRPO run (fgrpo_* metrics).")
        .tags(["fgrpo", "verl", "rl"])
        .refresh("30s")
        .time("now-6h", "now")
        .with_variable(gd.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
        .with_variable(
            gd.QueryVariable("data_source")
            .label("data_source")
            .datasource(DS)
            .query("label_values(fgrpo_tracked_prompts, data_source)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .multi(True)
            .include_all(True)
            .all_value(".*")
        )
    )
    for row, title, unit, queries, kind in PANELS:
        if row:
            board = board.with_row(gd.Row(row))
        board = board.with_panel(_panel(title, unit, queries, kind))
    return json.loads(json.dumps(board.build(), cls=JSONEncoder, sort_keys=True))


def expressions(dashboard: dict) -> list[str]:
    """Every PromQL expression in a dashboard JSON (panels and variables)."""
    exprs = [t["expr"] for p in dashboard.get("panels", []) for t in p.get("targets", []) if "expr" in t]
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            exprs.append(var["query"] if isinstance(var["query"], str) else var["query"]["query"])
    return exprs


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed JSON differs")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.output.exists() or args.output.read_text() != text:
            print(f"{args.output} is stale; run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
