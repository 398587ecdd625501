"""Hypothesis fuzzing of the three entry points: any response gives a well-formed result, any ground truth
either validates or raises GroundTruthError (never another exception)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reward_fns
import reward_fns.ifeval
import reward_fns.math
from reward_fns import GroundTruthError

_IF_GT = str(
    [
        {
            "instruction_id": ["punctuation:no_comma", "detectable_format:number_bullet_lists", "startend:quotation"],
            "kwargs": [{}, {"num_bullets": 2}, {}],
        }
    ]
)
_PIECES = [*"0123456789+-*/^_{}()[]\\., xyzabfrcqtpi$=%:<>\n", "\\boxed{", "\\frac", "</think>", "<think>", "Answer:"]
_LATEXISH = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)
_RESPONSES = st.one_of(
    st.text(max_size=300),
    _LATEXISH,
    st.binary(max_size=200),
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.lists(st.text(max_size=5), max_size=3),
)
_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _well_formed(result: dict, allowed_scores: set[float] | None = None) -> None:
    assert set(result) == {"score", "acc", "reason"}
    assert isinstance(result["score"], float) and isinstance(result["acc"], bool)
    assert isinstance(result["reason"], str)
    assert (result["reason"] == "") == result["acc"]
    if allowed_scores is not None:
        assert result["score"] in allowed_scores


@_FUZZ
@given(_RESPONSES)
def test_math_entry_point(response: object) -> None:
    _well_formed(reward_fns.math.compute_score("math", response, "\\frac{1}{2}", timeout_seconds=2), {0.0, 1.0})


@_FUZZ
@given(_RESPONSES)
def test_ifeval_entry_point(response: object) -> None:
    result = reward_fns.ifeval.compute_score("ifeval", response, _IF_GT, ifeval_mode="loose")
    _well_formed(result, {0.0, 1 / 3, 2 / 3, 1.0})


@_FUZZ
@given(st.sampled_from(["math_dapo", "aime25", "ifeval"]), _RESPONSES)
def test_dispatcher_entry_point(source: str, response: object) -> None:
    gt = _IF_GT if source == "ifeval" else "12"
    _well_formed(reward_fns.compute_score(source, response, gt, score_scheme="signed", timeout_seconds=2), {-1.0, 1.0})


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=15), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_JSONISH, _JSONISH.map(repr), _JSONISH.map(str), st.text(max_size=60)))
@pytest.mark.parametrize("source", ["ifeval", "math"])
def test_ground_truth_validates_or_raises_ground_truth_error(source: str, ground_truth: object) -> None:
    try:
        result = reward_fns.compute_score(source, "", ground_truth)
    except GroundTruthError:
        return
    _well_formed(result)
