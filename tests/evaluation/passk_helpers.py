"""Helpers of the pass@k tests: a small deterministic scorer and the sample/score files the tests write."""

from __future__ import annotations

import json
from pathlib import Path

SCORER_SOURCE = '''
import time


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """Exact match of the last \\\\boxed{...} against the ground truth; a verl-style result dict."""
    if not isinstance(ground_truth, str) or ground_truth.startswith("MALFORMED"):
        raise ValueError("ground_truth: expected a non-empty answer string")
    if "SLOW" in solution_str:
        time.sleep(30)
    marker = "\\\\boxed{"
    start = solution_str.rfind(marker)
    answer = solution_str[start + len(marker):].split("}")[0] if start >= 0 else None
    ok = answer == ground_truth
    return {"score": float(ok), "acc": ok, "reason": None if ok else ("no_answer" if answer is None else "mismatch")}
'''


def install_boxed_scorer(directory: Path) -> str:
    """Write the scorer module and return its ``file.py:function`` spec."""
    path = directory / "boxed_scorer.py"
    path.write_text(SCORER_SOURCE)
    return f"{path}:compute_score"


def write_samples(path: Path, correct: dict[str, list[bool]], data_source_of=lambda pid: pid.split("/")[0]) -> None:
    """One sample line per (problem, index); ``correct[pid][i]`` decides whether the answer is right."""
    with path.open("w") as out:
        for pid, outcomes in correct.items():
            for i, ok in enumerate(outcomes):
                answer = "42" if ok else "41"
                record = {
                    "problem_id": pid,
                    "data_source": data_source_of(pid),
                    "sample_index": i,
                    "response": f"reasoning ... so the answer is \\boxed{{{answer}}}",
                    "ground_truth": "42",
                    "extra_info": {"index": pid},
                }
                out.write(json.dumps(record) + "\n")


def make_outcomes(counts: dict[str, tuple[int, int]]) -> dict[str, list[bool]]:
    """{pid: (n, c)} -> outcome lists with c correct among n, correct ones spread out."""
    outcomes = {}
    for pid, (n, c) in counts.items():
        row = [False] * n
        for j in range(c):
            row[(j * 7) % n] = True
        assert sum(row) == c
        outcomes[pid] = row
    return outcomes
