"""Math reward: extraction and verdict tables, score schemes, ground-truth validation, time bounds."""

from __future__ import annotations

import time

import pytest

from reward_fns import GroundTruthError, RewardSettingError
from reward_fns.math import compute_score, compute_score_batch, extract_answer

CORRECT = [
    # (response, gold) -- each must score 1.0
    ("so \\boxed{42}", "42"),
    ("\\boxed{-7}", "-7"),
    ("\\boxed{1,000}", "1000"),
    ("\\boxed{1{,}000}", "1000"),
    ("\\boxed{0.5}", "\\frac{1}{2}"),
    ("\\boxed{\\frac{1}{2}}", "0.5"),
    ("\\boxed{\\dfrac{3}{4}}", "\\frac{3}{4}"),
    ("\\boxed{\\tfrac{3}{4}}", "0.75"),
    ("\\boxed{3/4}", "\\frac34"),
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}"),
    ("\\boxed{\\frac{\\pi}{2}}", "\\pi/2"),
    ("\\boxed{1200}", "1.2\\times10^{3}"),
    ("\\boxed{50\\%}", "50"),
    ("\\boxed{50\\%}", "0.5"),
    ("\\boxed{[0,1)}", "[0,1)"),
    ("\\boxed{(1, 2)}", "(1,2)"),
    ("\\boxed{\\{2, 1\\}}", "\\{1,2\\}"),
    ("\\boxed{\\begin{pmatrix}1\\\\2\\end{pmatrix}}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
    ("\\boxed{10 \\text{ cm}}", "10"),
    ("\\boxed{30^\\circ}", "30"),
    ("\\boxed{x=5}", "5"),
    ("\\boxed{5}", "x=5"),
    ("\\fbox{12}", "12"),
    ("\\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt3}{2}"),
    ("first \\boxed{3} then corrected \\boxed{4}", "4"),
    ("Reasoning...\nAnswer: 17", "17"),
    ("**Answer:** $\\frac{2}{3}$", "2/3"),
    ("The final answer is $12$. I hope it is correct.", "12"),
    ("The final answer is $\\boxed{9}$.", "9"),
    ("<think>maybe \\boxed{1}</think>The result is \\boxed{2}", "2"),
    ("\\boxed{\\text{(B)}}", "B"),
]

WRONG = [
    # (response, gold, reason)
    ("\\boxed{43}", "42", "mismatch"),
    ("\\boxed{0.49}", "\\frac{1}{2}", "mismatch"),
    ("\\boxed{2\\sqrt{3}}", "\\sqrt{8}", "mismatch"),
    ("first \\boxed{4} then \\boxed{3}", "4", "mismatch"),
    ("no answer given here", "4", "no_answer"),
    ("<think>the answer is \\boxed{4} but the thought never closes", "4", "no_answer"),
    ("<think>\\boxed{4}</think> I am not sure.", "4", "no_answer"),
    ("\\boxed{4", "4", "no_answer"),
    ("", "4", "no_answer"),
]


@pytest.mark.parametrize(("response", "gold"), CORRECT)
def test_correct_answers_score_one(response: str, gold: str) -> None:
    result = compute_score("math", response, gold)
    assert result == {"score": 1.0, "acc": True, "reason": ""}, (response, gold)


@pytest.mark.parametrize(("response", "gold", "reason"), WRONG)
def test_wrong_answers_score_zero_with_reason(response: str, gold: str, reason: str) -> None:
    assert compute_score("math", response, gold) == {"score": 0.0, "acc": False, "reason": reason}


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("\\boxed{\\frac{a}{\\sqrt{b}}}", "\\frac{a}{\\sqrt{b}}"),
        ("$\\boxed{5}$.", "5"),
        ("Answer: $x = 3$", "x = 3"),
        ("\\boxed 7 is it", "7"),
        ("Answer: 1\n\nWait, recheck.\nAnswer: 2", "2"),
        ("\\boxed{1}\nAnswer: 2", "2"),
        ("Answer: 2\n\\boxed{1}", "1"),
        ("nothing", None),
    ],
)
def test_extraction(response: str, expected: str | None) -> None:
    assert extract_answer(response) == expected


def test_signed_scheme_matches_math_dapo() -> None:
    assert compute_score("math_dapo", "Answer: 3", "3", score_scheme="signed")["score"] == 1.0
    assert compute_score("math_dapo", "Answer: 4", "3", score_scheme="signed")["score"] == -1.0
    assert compute_score("math_dapo", "nothing", "3", score_scheme="signed")["score"] == -1.0


def test_bad_settings_raise() -> None:
    with pytest.raises(RewardSettingError, match="score_scheme"):
        compute_score("math", "\\boxed{1}", "1", score_scheme="plusminus")
    with pytest.raises(RewardSettingError, match="timeout_seconds"):
        compute_score("math", "\\boxed{1}", "1", timeout_seconds=0)


@pytest.mark.parametrize("gold", [None, "", "   ", [], {"answer": 1}, float("nan"), True])
def test_malformed_ground_truth_raises_naming_the_field(gold: object) -> None:
    with pytest.raises(GroundTruthError, match=r"reward_model\.ground_truth"):
        compute_score("math", "", gold)


@pytest.mark.parametrize(("gold", "response"), [(3, "\\boxed{3}"), (2.5, "\\boxed{5/2}"), (["3", "x=3"], "\\boxed{3}")])
def test_ground_truth_numbers_and_lists(gold: object, response: str) -> None:
    assert compute_score("math", response, gold)["acc"]


@pytest.mark.parametrize("response", [None, 12, b"\\boxed{3}\xff", "\x00\xff" * 1000, "🙂" * 10_000, "{" * 100_000])
def test_any_response_gets_a_result(response: object) -> None:
    result = compute_score("math", response, "3")
    assert set(result) == {"score", "acc", "reason"}
    assert isinstance(result["score"], float)


@pytest.mark.parametrize(
    "response",
    [
        "\\boxed{2003^{2002^{2001}}}",
        "\\boxed{" + "+".join(f"\\frac{{{i}}}{{x+{i}}}" for i in range(20_000)) + "}",
    ],
    ids=["power_tower", "huge_latex"],
)
def test_pathological_input_times_out_within_the_bound(response: str) -> None:
    bound = 1.0
    compute_score("math", "\\boxed{x+1}", "1+x")  # warm the pool: start-up is not part of the bound
    start = time.monotonic()
    result = compute_score("math", response, "\\frac{1}{2}", timeout_seconds=bound)
    elapsed = time.monotonic() - start
    assert result == {"score": 0.0, "acc": False, "reason": "timeout"}
    assert elapsed < bound + 1.5, elapsed
    # The killed worker was replaced: the pool keeps scoring.
    assert compute_score("math", "\\boxed{\\sqrt{4}}", "2")["acc"]


def test_batch_matches_single_calls() -> None:
    responses = [r for r, _ in CORRECT[:10]] + [r for r, _, _ in WRONG[:4]]
    golds = [g for _, g in CORRECT[:10]] + [g for _, g, _ in WRONG[:4]]
    batch = compute_score_batch(["math"] * len(golds), responses, golds)
    assert batch == [compute_score("math", r, g) for r, g in zip(responses, golds, strict=True)]


FAST_PATH_PAIRS = [
    ("42", "42.0"),
    ("42", "43"),
    ("1000", "1,000"),
    ("-3", "-\\frac{6}{2}"),
    ("\\frac{3}{4}", "0.75"),
    ("\\frac{3}{4}", "\\dfrac{3}{4}"),
    ("\\frac{3}{4}", "3/5"),
    ("5", "x = 5"),
    ("5", "y=6"),
    ("x=5", "5"),
    ("30", "30^\\circ"),
    ("30", "30^{\\circ}"),
    ("10", "10 \\text{ cm}"),
    ("25", "25\\%"),
    ("0.25", "25\\%"),
    ("0.25", "26\\%"),
    ("1.2\\times 10^{3}", "1200"),
    ("1.2\\times 10^{3}", "120"),
    ("3.5\\cdot10^2", "350"),
]


@pytest.mark.parametrize(("gold", "answer"), FAST_PATH_PAIRS)
def test_in_process_fast_path_agrees_with_math_verify(gold: str, answer: str) -> None:
    from reward_fns.math.fast_compare import quick_verdict
    from reward_fns.math.worker import verify_answer

    fast = quick_verdict((gold,), answer)
    assert fast is not None, "this pair should be decided in process"
    assert fast == verify_answer((gold,), answer)[0]


def test_verdicts_are_remembered_but_timeouts_are_not() -> None:
    import reward_fns.math as math_reward

    math_reward.clear_verdict_cache()
    first = compute_score("math", "long reasoning A... \\boxed{\\sqrt{12}}", "2\\sqrt{3}")
    assert ((("2\\sqrt{3}",), "\\sqrt{12}")) in math_reward._verdicts
    again = compute_score("math", "other reasoning B... \\boxed{\\sqrt{12}}", "2\\sqrt{3}")
    assert first == again == {"score": 1.0, "acc": True, "reason": ""}
    tower = compute_score("math", "\\boxed{2003^{2002^{2001}}}", "2", timeout_seconds=1.0)
    assert tower["reason"] == "timeout"
    assert ((("2",), "2003^{2002^{2001}}")) not in math_reward._verdicts
