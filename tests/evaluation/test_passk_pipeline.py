"""Scoring and report stages end to end on JSONL files the tests write (CPU, real process pool)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from passk_helpers import make_outcomes, write_samples

from fgrpo_verl.evaluation.passk import pass_at_k
from fgrpo_verl.evaluation.records import EvalInputError
from fgrpo_verl.evaluation.report import compare_runs, passk_report, write_comparison, write_report
from fgrpo_verl.evaluation.scoring import ScorerError, score_file

REPO = Path(__file__).resolve().parents[2]

COUNTS = {
    "aime/0": (8, 0),
    "aime/1": (8, 1),
    "aime/2": (8, 3),
    "math/0": (8, 8),
    "math/1": (8, 5),
    "math/2": (8, 2),
}


def expected_passk(counts: dict[str, tuple[int, int]], source: str, k: int) -> float:
    rows = [v for pid, v in counts.items() if pid.startswith(source)]
    n = np.array([r[0] for r in rows])
    c = np.array([r[1] for r in rows])
    return float(pass_at_k(n, c, k).mean())


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_score_then_report_end_to_end_through_the_script(tmp_path, boxed_scorer):
    samples = tmp_path / "samples.jsonl"
    write_samples(samples, make_outcomes(COUNTS))
    scores = tmp_path / "scores.jsonl"
    script = [sys.executable, str(REPO / "scripts" / "eval_passk.py")]
    done = subprocess.run(
        [
            *script,
            "score",
            "--samples",
            str(samples),
            "--output",
            str(scores),
            "--scorer",
            boxed_scorer,
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "scored 48 samples (19 correct)" in done.stdout
    records = read_lines(scores)
    assert len(records) == 48 and {r["reason"] for r in records} == {None, "mismatch"}

    out_dir = tmp_path / "report"
    done = subprocess.run(
        [*script, "report", "--scores", str(scores), "--out-dir", str(out_dir), "--max-k", "8", "--resamples", "200"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((out_dir / "passk.json").read_text())
    assert report["ks"] == [1, 2, 4, 8]
    for source in ("aime", "math"):
        for k in (1, 2, 4, 8):
            cell = report["benchmarks"][source]["pass_at_k"][str(k)]
            assert cell["estimate"] == pytest.approx(expected_passk(COUNTS, source, k))
            assert cell["low"] <= cell["estimate"] <= cell["high"]
    assert report["average"]["8"] == pytest.approx((2 / 3 + 1.0) / 2)
    markdown = (out_dir / "passk.md").read_text()
    assert "| aime | 3 |" in markdown and "| average |" in markdown and "pass@8" in markdown
    assert (out_dir / "passk_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_malformed_line_stops_with_location_and_scoring_resumes(tmp_path, boxed_scorer):
    samples = tmp_path / "samples.jsonl"
    write_samples(samples, make_outcomes(COUNTS))
    lines = samples.read_text().splitlines()
    good_line = lines[20]
    lines[20] = good_line[:-5]  # truncated JSON on line 21
    samples.write_text("\n".join(lines) + "\n")
    scores = tmp_path / "scores.jsonl"
    with pytest.raises(EvalInputError, match=r"samples\.jsonl:21: not valid JSON"):
        score_file(samples, scores, scorer=boxed_scorer, workers=1, batch_size=4)
    assert len(read_lines(scores)) == 20  # everything before the bad line was kept

    lines[20] = good_line
    samples.write_text("\n".join(lines) + "\n")
    summary = score_file(samples, scores, scorer=boxed_scorer, workers=1, batch_size=4)
    assert (summary.skipped, summary.scored) == (20, 28)
    report = passk_report([scores], max_k=8, n_resamples=50)
    assert report["benchmarks"]["math"]["pass_at_k"]["1"]["estimate"] == pytest.approx(15 / 24)


def test_torn_last_score_line_is_rescored(tmp_path, boxed_scorer):
    samples = tmp_path / "samples.jsonl"
    write_samples(samples, make_outcomes({"aime/0": (4, 1), "aime/1": (4, 2)}))
    scores = tmp_path / "scores.jsonl"
    score_file(samples, scores, scorer=boxed_scorer, workers=1)
    text = scores.read_text().splitlines()
    scores.write_text("\n".join(text[:5]) + "\n" + text[5][:17])  # crash in the middle of line 6
    summary = score_file(samples, scores, scorer=boxed_scorer, workers=1)
    assert (summary.skipped, summary.scored) == (5, 3)
    assert sorted((r["problem_id"], r["sample_index"]) for r in read_lines(scores)) == sorted(
        (f"aime/{p}", i) for p in range(2) for i in range(4)
    )


def test_scorer_value_error_names_line_and_field_and_keeps_results(tmp_path, boxed_scorer):
    samples = tmp_path / "samples.jsonl"
    write_samples(samples, make_outcomes({"aime/0": (4, 1), "aime/1": (4, 2)}))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    lines[6]["ground_truth"] = "MALFORMED"
    samples.write_text("".join(json.dumps(r) + "\n" for r in lines))
    scores = tmp_path / "scores.jsonl"
    with pytest.raises(EvalInputError, match=r"samples\.jsonl:7: field 'ground_truth'"):
        score_file(samples, scores, scorer=boxed_scorer, workers=1, batch_size=2)
    assert len(read_lines(scores)) == 7  # every other sample was scored and written


def test_missing_field_and_bad_scorer(tmp_path, boxed_scorer):
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"problem_id": "a/0", "data_source": "a", "sample_index": 0}) + "\n")
    with pytest.raises(EvalInputError, match=r"samples\.jsonl:1: field 'response' is missing"):
        score_file(samples, tmp_path / "s.jsonl", scorer=boxed_scorer, workers=1)
    with pytest.raises(ScorerError, match="no callable 'nope'"):
        score_file(samples, tmp_path / "s.jsonl", scorer=boxed_scorer.replace("compute_score", "nope"), workers=1)


def test_hanging_scorer_is_bounded_and_marked_timeout(tmp_path, boxed_scorer):
    samples = tmp_path / "samples.jsonl"
    write_samples(samples, make_outcomes({"aime/0": (3, 2)}))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    lines[1]["response"] = "SLOW " + lines[1]["response"]
    samples.write_text("".join(json.dumps(r) + "\n" for r in lines))
    scores = tmp_path / "scores.jsonl"
    summary = score_file(samples, scores, scorer=boxed_scorer, workers=1, timeout=1.0, batch_size=3)
    by_index = {r["sample_index"]: r for r in read_lines(scores)}
    assert by_index[1]["reason"] == "timeout" and by_index[1]["acc"] is False
    assert by_index[0]["acc"] is True  # the rest of the timed-out batch was rescored one by one
    assert summary.reasons["timeout"] == 1


def test_report_rejects_too_few_samples_naming_file_line_field(tmp_path, boxed_scorer):
    samples = tmp_path / "samples.jsonl"
    write_samples(samples, make_outcomes({"aime/0": (8, 1), "aime/1": (4, 2)}))
    scores = tmp_path / "scores.jsonl"
    score_file(samples, scores, scorer=boxed_scorer, workers=1)
    first_line_of_aime1 = next(i for i, r in enumerate(read_lines(scores), 1) if r["problem_id"] == "aime/1")
    with pytest.raises(
        EvalInputError,
        match=rf"scores\.jsonl:{first_line_of_aime1}: problem 'aime/1' .* 4 scored samples \(field 'sample_index'\)",
    ):
        passk_report([scores], max_k=8)
    ragged = passk_report([scores], max_k=None, n_resamples=10)
    assert ragged["ks"] == [1, 2, 4]
    assert ragged["warnings"] == [
        "aime: samples per problem range from 4 to 8; if scoring was interrupted, rerun the score stage to complete it"
    ]


def test_report_rejects_duplicate_scores(tmp_path):
    scores = tmp_path / "scores.jsonl"
    row = {"problem_id": "a/0", "data_source": "a", "sample_index": 0, "acc": True, "score": 1.0}
    scores.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(EvalInputError, match=r"scores\.jsonl:2: field 'sample_index' 0 .* already scored at .*:1"):
        passk_report([scores], max_k=1)
    scores.write_text(json.dumps(row | {"acc": "yes"}) + "\n")
    with pytest.raises(EvalInputError, match=r"scores\.jsonl:1: field 'acc' must be bool"):
        passk_report([scores], max_k=1)


def write_scores(path: Path, counts: dict[str, tuple[int, int]]) -> None:
    with path.open("w") as out:
        for pid, outcomes in make_outcomes(counts).items():
            for i, ok in enumerate(outcomes):
                out.write(
                    json.dumps({"problem_id": pid, "data_source": pid.split("/")[0], "sample_index": i, "acc": ok})
                    + "\n"
                )


def test_compare_two_runs_marks_significant_differences(tmp_path):
    rng = np.random.default_rng(0)
    rates = rng.beta(0.4, 2.0, size=60)
    strong = {f"bench/{i}": (64, int(rng.binomial(64, min(1.0, r * 2 + 0.05)))) for i, r in enumerate(rates)}
    weak = {f"bench/{i}": (64, int(rng.binomial(64, r))) for i, r in enumerate(rates)}
    for i in range(20):  # a second benchmark where the runs are alike
        strong[f"other/{i}"] = weak[f"other/{i}"] = (64, 10 + i)
    write_scores(tmp_path / "a.jsonl", strong)
    write_scores(tmp_path / "b.jsonl", dict(reversed(list(weak.items()))))  # order must not matter
    result = compare_runs(
        [tmp_path / "a.jsonl"], [tmp_path / "b.jsonl"], labels=("F-GRPO", "GRPO"), m=32, n_resamples=300
    )
    assert result["ks"] == [1, 2, 4, 8, 16, 32]
    cell = result["benchmarks"]["bench"]["results"]["1"]
    bench = [p for p in strong if p.startswith("bench/")]
    assert cell["delta"] == pytest.approx(np.mean([(strong[p][1] - weak[p][1]) / 64 for p in bench]))
    assert cell["mark"] in {"*", "**", "***"} and cell["p_value"] < 0.05
    same = result["benchmarks"]["other"]["results"]["8"]
    assert same["delta"] == 0 and same["mark"] == ""
    average = result["average"]["8"]
    assert average["delta"] == pytest.approx(result["benchmarks"]["bench"]["results"]["8"]["delta"] / 2)
    assert average["ci_low"] <= average["delta"] <= average["ci_high"]
    paths = write_comparison(result, tmp_path / "cmp")
    markdown = (tmp_path / "cmp" / "compare.md").read_text()
    assert "F-GRPO vs GRPO" in markdown and "***" in markdown and "| average |" in markdown
    assert paths[-1].read_bytes()[:4] == b"\x89PNG"


def test_compare_rejects_mismatched_problem_ids(tmp_path):
    write_scores(tmp_path / "a.jsonl", {"bench/0": (4, 1), "bench/1": (4, 2)})
    write_scores(tmp_path / "b.jsonl", {"bench/0": (4, 1), "bench/7": (4, 2)})
    with pytest.raises(
        EvalInputError,
        match=r"a\.jsonl:5: field 'problem_id' 'bench/1' \(bench\) is missing from the other run \(.*b\.jsonl\)",
    ):
        compare_runs([tmp_path / "a.jsonl"], [tmp_path / "b.jsonl"], m=4)
    write_scores(tmp_path / "c.jsonl", {"other/0": (4, 1)})
    with pytest.raises(EvalInputError, match=r"field 'data_source' 'bench' has no scores in the other run"):
        compare_runs([tmp_path / "a.jsonl"], [tmp_path / "c.jsonl"], m=4)


def test_too_few_samples_names_the_flag_to_lower(tmp_path):
    write_scores(tmp_path / "a.jsonl", {"bench/0": (4, 1)})
    with pytest.raises(EvalInputError, match=r"m=8 needs at least 8; generate/score more samples or lower --m$"):
        compare_runs([tmp_path / "a.jsonl"], [tmp_path / "a.jsonl"], m=8)
    with pytest.raises(EvalInputError, match=r"k=8 needs at least 8; .* lower --max-k \(or pass --ks\)$"):
        passk_report([tmp_path / "a.jsonl"], max_k=8)


def test_write_report_without_plot(tmp_path):
    write_scores(tmp_path / "s.jsonl", {"x/0": (2, 1)})
    paths = write_report(passk_report([tmp_path / "s.jsonl"], max_k=2, n_resamples=10), tmp_path / "r", plot=False)
    assert [p.name for p in paths] == ["passk.json", "passk.md"]


def test_default_scorer_is_reward_fns_through_its_batch_api(tmp_path):
    """The real reward_fns (math-verify in its bounded pool) via compute_score_batch, with resume."""
    rows = [
        ("aime24/0", "aime24", "so the answer is \\boxed{204}", "204", True),
        ("aime24/0", "aime24", "so the answer is \\boxed{205}", "204", False),
        ("aime24/0", "aime24", "I give up", "204", False),
        ("math500/7", "math500", "hence \\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{1}{\\sqrt{2}}", True),
        ("math500/7", "math500", "hence \\boxed{0.5}", "\\frac{1}{2}", True),
        ("math500/7", "math500", "hence \\boxed{3}", "", None),  # malformed ground truth (line 6)
    ]
    samples = tmp_path / "samples.jsonl"
    counters: dict[str, int] = {}
    with samples.open("w") as out:
        for pid, source, response, truth, _ in rows:
            index = counters[pid] = counters.get(pid, -1) + 1
            record = {"problem_id": pid, "data_source": source, "sample_index": index, "response": response}
            out.write(json.dumps(record | {"ground_truth": truth}) + "\n")
    scores = tmp_path / "scores.jsonl"
    with pytest.raises(
        EvalInputError, match=r"samples\.jsonl:6: field 'ground_truth' .*reward_model\.ground_truth is empty"
    ):
        score_file(samples, scores)
    written = {(r["problem_id"], r["sample_index"]): r for r in read_lines(scores)}
    assert len(written) == 5
    assert [written[(pid, i)]["acc"] for i, (pid, *_rest) in zip([0, 1, 2, 0, 1], rows[:5], strict=True)] == [
        True,
        False,
        False,
        True,
        True,
    ]
    assert written[("aime24/0", 2)]["reason"] == "no_answer"

    lines = samples.read_text().splitlines()
    lines[5] = lines[5].replace('"ground_truth": ""', '"ground_truth": "3"')
    samples.write_text("\n".join(lines) + "\n")
    summary = score_file(samples, scores)
    assert (summary.skipped, summary.scored, summary.correct) == (5, 1, 1)


def test_pool_mode_refuses_a_scorer_with_its_own_pool(tmp_path):
    samples = tmp_path / "samples.jsonl"
    write_samples(samples, make_outcomes({"aime24/0": (2, 1)}), data_source_of=lambda pid: "aime24")
    with pytest.raises(ScorerError, match="manages its own worker processes; use --mode batch"):
        score_file(samples, tmp_path / "scores.jsonl", mode="pool")
    assert not (tmp_path / "scores.jsonl").exists()
