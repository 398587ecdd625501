"""The data_source dispatcher: routing, unknown sources, row validation with an empty response."""

from __future__ import annotations

import pytest

import reward_fns
from reward_fns import GroundTruthError, UnknownDataSourceError, compute_score, compute_score_batch


@pytest.mark.parametrize(
    "source",
    ["math_dapo", "MATH", "lighteval/MATH", "HuggingFaceH4/MATH-500", "deepscaler", "aime2024", "AIME25", "amc23"],
)
def test_math_sources_route_to_math(source: str) -> None:
    assert reward_fns.scorer_module(source) == "reward_fns.math"
    assert compute_score(source, "\\boxed{2}", "2")["acc"]


@pytest.mark.parametrize("source", ["unknown_set", "", None, 3])
def test_unknown_source_lists_the_known_ones(source: object) -> None:
    with pytest.raises(UnknownDataSourceError) as info:
        compute_score(source, "\\boxed{2}", "2")  # type: ignore[arg-type]
    if source == "unknown_set":
        assert "math_dapo" in str(info.value) and "aime" in str(info.value)


def test_row_validation_with_empty_response() -> None:
    assert compute_score("math_dapo", "", "42", {"index": 0})["reason"] == "no_answer"
    with pytest.raises(GroundTruthError, match="ground_truth"):
        compute_score("math_dapo", "", None, {"index": 0})
    assert issubclass(GroundTruthError, ValueError)


def test_mixed_batch_keeps_order() -> None:
    responses = ["\\boxed{1}", "\\boxed{\\sqrt{9}}", "x"]
    results = compute_score_batch(["aime24", "math", "amc23"], responses, ["1", "3", "5"])
    assert [r["acc"] for r in results] == [True, True, False]
