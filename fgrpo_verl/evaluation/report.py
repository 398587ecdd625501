"""Stage (c): pass@k tables, curves and two-run comparisons from score JSONL files (CPU only).

Outputs (``write_report`` / ``write_comparison``): ``*.json`` with every number, ``*.md`` tables in
the paper's layout (benchmarks x k, macro average over benchmarks), and ``*.png`` curves.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from fgrpo_verl.evaluation.passk import default_ks
from fgrpo_verl.evaluation.records import EvalInputError, ProblemCounts, check_enough_samples, load_score_counts
from fgrpo_verl.evaluation.stats import bootstrap_ci, macro_average_test, paired_subsample_test

PathList = list[str | os.PathLike]


def _resolve_ks(tables: dict[str, ProblemCounts], max_k: int | None, ks: list[int] | None) -> list[int]:
    if ks is None:
        if max_k is None:
            max_k = min(min(table.n) for table in tables.values())
        ks = default_ks(max_k)
    ks = sorted({int(k) for k in ks})
    if ks[0] < 1:
        raise EvalInputError(f"--ks must be positive, got {ks}")
    check_enough_samples(tables, ks[-1])
    return ks


def passk_report(
    score_paths: PathList,
    max_k: int | None = 256,
    ks: list[int] | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Mean unbiased pass@k per benchmark (``data_source``) with bootstrap CIs over problems.

    ``max_k=None`` uses the largest power of two every problem supports.
    """
    tables = load_score_counts(score_paths)
    ks = _resolve_ks(tables, max_k, ks)
    benchmarks: dict[str, Any] = {}
    for data_source in sorted(tables):
        n, c = tables[data_source].arrays()
        intervals = bootstrap_ci(n, c, ks, n_resamples=n_resamples, confidence=confidence, seed=seed)
        benchmarks[data_source] = {
            "problems": int(n.size),
            "samples_per_problem": {"min": int(n.min()), "max": int(n.max())},
            "pass_at_k": {str(k): vars(intervals[k]) for k in ks},
        }
    average = {str(k): float(np.mean([b["pass_at_k"][str(k)]["estimate"] for b in benchmarks.values()])) for k in ks}
    warnings = [
        f"{name}: samples per problem range from {b['samples_per_problem']['min']} to "
        f"{b['samples_per_problem']['max']}; if scoring was interrupted, rerun the score stage to complete it"
        for name, b in benchmarks.items()
        if b["samples_per_problem"]["min"] != b["samples_per_problem"]["max"]
    ]
    return {
        "ks": ks,
        "confidence": confidence,
        "bootstrap_resamples": n_resamples,
        "seed": seed,
        "sources": [os.fspath(p) for p in score_paths],
        "benchmarks": benchmarks,
        "average": average,
        "warnings": warnings,
    }


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def report_markdown(report: dict[str, Any]) -> str:
    ks = report["ks"]
    level = round(100 * report["confidence"])
    lines = [
        "# pass@k (unbiased estimator, %)",
        "",
        "| benchmark | problems | " + " | ".join(f"pass@{k}" for k in ks) + " |",
        "|---|---:|" + "---:|" * len(ks),
    ]
    for name, bench in report["benchmarks"].items():
        cells = " | ".join(_pct(bench["pass_at_k"][str(k)]["estimate"]) for k in ks)
        lines.append(f"| {name} | {bench['problems']} | {cells} |")
    if len(report["benchmarks"]) > 1:
        lines.append("| average | | " + " | ".join(_pct(report["average"][str(k)]) for k in ks) + " |")
    lines += [f"\n**Warning:** {warning}" for warning in report.get("warnings", [])]
    lines += ["", f"{level}% bootstrap intervals over problems ({report['bootstrap_resamples']} resamples):", ""]
    lines += ["| benchmark | " + " | ".join(f"pass@{k}" for k in ks) + " |", "|---|" + "---:|" * len(ks)]
    for name, bench in report["benchmarks"].items():
        cells = " | ".join(
            f"{_pct(bench['pass_at_k'][str(k)]['low'])}-{_pct(bench['pass_at_k'][str(k)]['high'])}" for k in ks
        )
        lines.append(f"| {name} | {cells} |")
    return "\n".join(lines) + "\n"


def _plot_curves(ax, ks: list[int], series: dict[str, tuple[list[float], list[float] | None, list[float] | None]]):
    for label, (values, low, high) in series.items():
        (line,) = ax.plot(ks, [100 * v for v in values], marker="o", markersize=3, label=label)
        if low is not None and high is not None:
            ax.fill_between(ks, [100 * v for v in low], [100 * v for v in high], color=line.get_color(), alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k (%)")
    ax.grid(alpha=0.3)


def _write_json_and_markdown(
    out_dir: str | os.PathLike, stem: str, data: dict[str, Any], markdown: str
) -> tuple[Path, list[Path]]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{stem}.json", out / f"{stem}.md"]
    written[0].write_text(json.dumps(data, indent=2) + "\n")
    written[1].write_text(markdown)
    return out, written


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # headless: CI and clusters have no display
    import matplotlib.pyplot as plt

    return plt


def write_report(report: dict[str, Any], out_dir: str | os.PathLike, plot: bool = True) -> list[Path]:
    """Write ``passk.json``, ``passk.md`` and (``plot``) ``passk_curves.png``; return the paths."""
    out, written = _write_json_and_markdown(out_dir, "passk", report, report_markdown(report))
    if plot:
        plt = _pyplot()
        ks = report["ks"]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        series = {}
        for name, bench in report["benchmarks"].items():
            cells = [bench["pass_at_k"][str(k)] for k in ks]
            series[name] = ([c["estimate"] for c in cells], [c["low"] for c in cells], [c["high"] for c in cells])
        _plot_curves(ax, ks, series)
        ax.set_title("unbiased pass@k with bootstrap CI")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "passk_curves.png", dpi=120)
        plt.close(fig)
        written.append(out / "passk_curves.png")
    return written


def _aligned(
    tables_a: dict[str, ProblemCounts], tables_b: dict[str, ProblemCounts], paths_a: PathList, paths_b: PathList
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per benchmark, both runs' counts in the same problem order; mismatches raise naming file and line."""
    names = (", ".join(map(os.fspath, paths_a)), ", ".join(map(os.fspath, paths_b)))
    for mine, other, other_name in ((tables_a, tables_b, names[1]), (tables_b, tables_a, names[0])):
        for data_source, table in mine.items():
            if data_source not in other:
                raise EvalInputError(
                    f"{table.first_seen[0]}: field 'data_source' {data_source!r} has no scores in the other run "
                    f"({other_name}); compare runs over the same benchmarks (--data-source selects some)"
                )
            other_ids = set(other[data_source].problem_ids)
            for problem_id, where in zip(table.problem_ids, table.first_seen, strict=True):
                if problem_id not in other_ids:
                    raise EvalInputError(
                        f"{where}: field 'problem_id' {problem_id!r} ({data_source}) is missing from the other "
                        f"run ({other_name}); both runs must score the same problems"
                    )
    aligned = {}
    for data_source, table_a in tables_a.items():
        table_b = tables_b[data_source]
        order = {pid: i for i, pid in enumerate(table_b.problem_ids)}
        pick = np.asarray([order[pid] for pid in table_a.problem_ids], dtype=np.int64)
        n_a, c_a = table_a.arrays()
        n_b, c_b = table_b.arrays()
        aligned[data_source] = (n_a, c_a, n_b[pick], c_b[pick])
    return aligned


def select_sources(tables: dict[str, ProblemCounts], sources: list[str] | None) -> dict[str, ProblemCounts]:
    if not sources:
        return tables
    unknown = sorted(set(sources) - set(tables))
    if unknown:
        raise EvalInputError(f"--data-source {unknown} not found; the scores hold {sorted(tables)}")
    return {name: tables[name] for name in sources}


def compare_runs(
    paths_a: PathList,
    paths_b: PathList,
    labels: tuple[str, str] = ("A", "B"),
    max_k: int | None = 256,
    ks: list[int] | None = None,
    m: int = 256,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    resample_problems: bool = True,
    seed: int = 0,
    data_sources: list[str] | None = None,
) -> dict[str, Any]:
    """Paired m-out-of-n subsampling comparison of two runs (``delta = A - B``) per benchmark and k."""
    tables_a = select_sources(load_score_counts(paths_a), data_sources)
    tables_b = select_sources(load_score_counts(paths_b), data_sources)
    aligned = _aligned(tables_a, tables_b, paths_a, paths_b)
    if ks is None:
        ks = default_ks(min(m, max_k) if max_k else m)
    ks = sorted({int(k) for k in ks})
    check_enough_samples(tables_a, m, what="m")
    check_enough_samples(tables_b, m, what="m")
    options = {"m": m, "n_resamples": n_resamples, "confidence": confidence, "resample_problems": resample_problems}
    benchmarks = {}
    for index, data_source in enumerate(sorted(aligned)):
        results = paired_subsample_test(*aligned[data_source], ks, seed=(seed, index), **options)
        benchmarks[data_source] = {
            "problems": int(aligned[data_source][0].size),
            "results": {str(r.k): r.to_dict() for r in results},
        }
    # Same seed streams as above, so the average's resamples are the means of the benchmarks' ones.
    average_results = macro_average_test([aligned[name] for name in sorted(aligned)], ks, seed=seed, **options)
    average = {str(r.k): r.to_dict() for r in average_results}
    return {
        "labels": list(labels),
        "ks": ks,
        "m": m,
        "resamples": n_resamples,
        "confidence": confidence,
        "resample_problems": resample_problems,
        "seed": seed,
        "sources": {labels[0]: [os.fspath(p) for p in paths_a], labels[1]: [os.fspath(p) for p in paths_b]},
        "benchmarks": benchmarks,
        "average": average,
    }


def comparison_markdown(result: dict[str, Any]) -> str:
    ks = result["ks"]
    a, b = result["labels"]
    lines = [
        f"# pass@k: {a} vs {b} (delta = {a} - {b}, percentage points)",
        "",
        f"Paired m-out-of-n subsampling, m = {result['m']}, {result['resamples']} resamples"
        + (", problems resampled" if result["resample_problems"] else ", problems fixed")
        + ". Marks: * p < 0.05, ** p < 0.01, *** p < 0.001 (two-sided, per cell, no multiplicity correction).",
        "",
        "| benchmark | " + " | ".join(f"pass@{k}" for k in ks) + " |",
        "|---|" + "---:|" * len(ks),
    ]

    def cell(r: dict[str, Any]) -> str:
        return f"{_pct(r['pass_a'])} vs {_pct(r['pass_b'])} ({100 * r['delta']:+.1f}{r['mark']})"

    for name, bench in result["benchmarks"].items():
        lines.append(f"| {name} | " + " | ".join(cell(bench["results"][str(k)]) for k in ks) + " |")
    if len(result["benchmarks"]) > 1:
        lines.append("| average | " + " | ".join(cell(result["average"][str(k)]) for k in ks) + " |")
    lines += ["", "| benchmark | k | delta | CI | p |", "|---|---:|---:|---|---:|"]
    detail = [(name, bench["results"]) for name, bench in result["benchmarks"].items()]
    if len(result["benchmarks"]) > 1:
        detail.append(("average", result["average"]))
    for name, cells in detail:
        for k in ks:
            r = cells[str(k)]
            lines.append(
                f"| {name} | {k} | {100 * r['delta']:+.2f}{r['mark']} | "
                f"[{100 * r['ci_low']:+.2f}, {100 * r['ci_high']:+.2f}] | {r['p_value']:.4f} |"
            )
    return "\n".join(lines) + "\n"


def write_comparison(result: dict[str, Any], out_dir: str | os.PathLike, plot: bool = True) -> list[Path]:
    """Write ``compare.json``, ``compare.md`` and (``plot``) ``compare_curves.png``; return the paths."""
    out, written = _write_json_and_markdown(out_dir, "compare", result, comparison_markdown(result))
    if plot:
        plt = _pyplot()
        ks = result["ks"]
        names = list(result["benchmarks"])
        cols = min(3, len(names))
        rows = -(-len(names) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.4 * rows), squeeze=False)
        for ax, name in zip(axes.flat, names, strict=False):
            res = [result["benchmarks"][name]["results"][str(k)] for k in ks]
            series = {
                label: ([r[side] for r in res], None, None)
                for label, side in zip(result["labels"], ("pass_a", "pass_b"), strict=True)
            }
            _plot_curves(ax, ks, series)
            for k, r in zip(ks, res, strict=True):
                if r["mark"]:
                    ax.annotate(
                        r["mark"], (k, 100 * max(r["pass_a"], r["pass_b"])), ha="center", va="bottom", fontsize=8
                    )
            ax.set_title(name, fontsize=9)
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(names) :]:
            ax.set_visible(False)
        fig.tight_layout()
        fig.savefig(out / "compare_curves.png", dpi=120)
        plt.close(fig)
        written.append(out / "compare_curves.png")
    return written
