"""Rows as verl reads them back from parquet (numpy arrays, null-filled struct fields) score as written."""

from __future__ import annotations

import pandas as pd

from reward_fns import compute_score


def test_rows_round_tripped_through_parquet(tmp_path) -> None:
    rows = [
        {
            "data_source": "math_dapo",
            "reward_model": {"style": "rule", "ground_truth": "\\frac{1}{2}"},
            "response": "Answer: 0.5",
            "expected": 1.0,
        },
        {
            "data_source": "ifeval",
            # Object form: parquet stores the kwargs of both instructions as one struct type, so each
            # comes back with the other's keys set to null, and the lists come back as numpy arrays.
            "reward_model": {
                "style": "rule",
                "ground_truth": [
                    {
                        "instruction_id": ["keywords:existence", "length_constraints:number_words"],
                        "kwargs": [{"keywords": ["rain", "cloud"]}, {"num_words": 3, "relation": "at least"}],
                    }
                ],
            },
            "response": "Rain falls from a grey cloud.",
            "expected": 1.0,
        },
        {
            "data_source": "ifeval",
            "reward_model": {
                "style": "rule",
                "ground_truth": [
                    {
                        "instruction_id": ["keywords:existence", "length_constraints:number_words"],
                        "kwargs": [{"keywords": ["sun"]}, {"num_words": 30, "relation": "at least"}],
                    }
                ],
            },
            "response": "Rain falls from a grey cloud.",
            "expected": 0.0,
        },
    ]
    # One file per domain, as data sets are written (a column cannot mix strings and lists).
    pd.DataFrame(rows[:1]).to_parquet(tmp_path / "math.parquet")
    pd.DataFrame(rows[1:]).to_parquet(tmp_path / "if.parquet")
    loaded = pd.concat([pd.read_parquet(tmp_path / "math.parquet"), pd.read_parquet(tmp_path / "if.parquet")])
    ground_truth = loaded.iloc[1]["reward_model"]["ground_truth"]
    assert type(ground_truth).__name__ == "ndarray"  # the shape the scorer must accept
    assert ground_truth[0]["kwargs"][0]["num_words"] is None  # the other instruction's key, nulled
    for _, row in loaded.iterrows():
        gt = row["reward_model"]["ground_truth"]
        assert compute_score(row["data_source"], "", gt, {})["acc"] is False  # row validation
        assert compute_score(row["data_source"], row["response"], gt, {})["score"] == row["expected"]
