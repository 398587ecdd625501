"""Instruction following: every IFEval id passing and failing, strict vs loose, ground-truth formats."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_fns import GroundTruthError, compute_score
from reward_fns.ifeval import IFEVAL_IDS, parse_ground_truth
from reward_fns.ifeval.checkers import count_line_items, count_placeholders, format_title
from reward_fns.ifeval.text import count_sentences

LOREM = "The committee met on Tuesday and agreed on the budget for next year"

# (instruction id, kwargs, a response that follows it, a response that does not)
CASES = [
    ("keywords:existence", {"keywords": ["budget", "C++"]}, "The BUDGET is in C++.", "The budget is fine."),
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "at least"}, "cat Cat", "one cat"),
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "less than"}, "one cat", "cat cat"),
    ("keywords:forbidden_words", {"forbidden_words": ["red"]}, "a reddish sky", "a Red sky"),
    ("keywords:letter_frequency", {"letter": "z", "let_frequency": 2, "let_relation": "at least"}, "Zz", "z"),
    (
        "language:response_language",
        {"language": "de"},
        "Das ist ein schöner Tag und wir gehen heute spazieren.",
        "This is a beautiful day and we are going for a walk today.",
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "less than"},
        "One. Two.",
        "One. Two. Three.",
    ),
    (
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 2},
        "First part.\n***\nSecond part.",
        "First.\n***\n\n***\nThird.",
    ),
    (
        "length_constraints:number_words",
        {"num_words": 5, "relation": "at least"},
        "one two three four five",
        "one two three",
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        'First here.\n\n"Then, more.',
        "A.\n\nB.",
    ),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "Hi [name] at [address]", "Hi [name]"),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body.\np.s. see you", "Body only."),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Body.\nP. P. S later", "Body. PS"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* one\n- two", "* one\n* two\n* three"),
    ("detectable_format:constrained_response", {}, "My answer is maybe.", "Maybe."),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and **two**", "*one* only"),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\nA\nSection 2\nB",
        "Section 1\nA",
    ),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', "{'a': 1}"),
    ("detectable_format:title", {}, "<<My Poem>>\ntext", "<< >> no title"),
    ("combination:two_responses", {}, "First answer.******Second answer.", "Same.******Same."),
    (
        "combination:repeat_prompt",
        {"prompt_to_repeat": "Write a poem."},
        "write a poem. Here it is.",
        "Here is a poem.",
    ),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        'Done. Any other questions?"',
        "Any other questions? Bye.",
    ),
    ("startend:quotation", {}, '"All quoted."', 'Not "quoted".'),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "THIS is VERY good",
        "This is VERY good",
    ),
    ("change_case:english_capital", {}, "THIS IS ALL IN CAPITAL LETTERS AND IN ENGLISH.", "This is not."),
    ("change_case:english_lowercase", {}, "this is all lowercase english text.", "This is Not."),
    ("punctuation:no_comma", {}, "No commas here.", "Yes, a comma."),
]


def _allenai(instruction_id: str, kwargs: dict) -> str:
    return str([{"instruction_id": [instruction_id], "kwargs": [kwargs]}])


def test_cases_cover_all_25_ids() -> None:
    assert len(IFEVAL_IDS) == 25
    assert {case[0] for case in CASES} == set(IFEVAL_IDS)


@pytest.mark.parametrize(("instruction_id", "kwargs", "good", "bad"), CASES)
def test_each_instruction_passes_and_fails(instruction_id: str, kwargs: dict, good: str, bad: str) -> None:
    gt = _allenai(instruction_id, kwargs)
    assert compute_score("ifeval", good, gt) == {"score": 1.0, "acc": True, "reason": ""}
    result = compute_score("ifeval", bad, gt)
    assert result == {"score": 0.0, "acc": False, "reason": f"not_followed:{instruction_id}"}


@pytest.mark.parametrize(
    ("instruction_id", "kwargs", "response"),
    [
        ("startend:quotation", {}, 'Sure, here it is:\n"All quoted."'),
        ("punctuation:no_comma", {}, "Sure, here you go:\nNo commas here."),
        ("detectable_format:json_format", {}, '{"a": 1}\nHope this helps!'),
        (
            "startend:end_checker",
            {"end_phrase": "Is there anything else I can help with?"},
            "**Is there anything else I can help with?**",
        ),
    ],
)
def test_loose_forgives_what_strict_does_not(instruction_id: str, kwargs: dict, response: str) -> None:
    gt = _allenai(instruction_id, kwargs)
    assert compute_score("ifeval", response, gt)["acc"] is False
    assert compute_score("ifeval", response, gt, ifeval_mode="loose")["acc"] is True


def test_fraction_binary_signed_schemes() -> None:
    gt = str([{"instruction_id": ["punctuation:no_comma", "startend:quotation"], "kwargs": [{}, {}]}])
    assert compute_score("ifeval", "a, b", gt)["score"] == 0.0
    half = compute_score("ifeval", "no comma", gt)
    assert half == {"score": 0.5, "acc": False, "reason": "not_followed:startend:quotation"}
    assert compute_score("ifeval", "no comma", gt, score_scheme="binary")["score"] == 0.0
    assert compute_score("ifeval", "no comma", gt, score_scheme="signed")["score"] == -1.0
    assert compute_score("ifeval", '"quoted"', gt, score_scheme="signed")["score"] == 1.0


def test_ground_truth_formats_agree() -> None:
    kwargs = {"num_words": 3, "relation": "at least"}
    allenai_repr = str([{"instruction_id": ["length_constraints:number_words"], "kwargs": [kwargs]}])
    allenai_json = json.dumps([{"instruction_id": ["length_constraints:number_words"], "kwargs": [kwargs]}])
    google_row = {"instruction_id_list": ["length_constraints:number_words"], "kwargs": [kwargs]}
    # HF datasets store kwargs as one struct: every instruction's keys, unused ones null.
    struct_kwargs = {**kwargs, "keywords": None, "language": None, "num_sentences": None}
    hf_row = {"instruction_id_list": ["length_constraints:number_words"], "kwargs": [struct_kwargs]}
    parsed = {parse_ground_truth(gt) for gt in (allenai_repr, allenai_json, google_row, hf_row)}
    assert len(parsed) == 1


@pytest.mark.parametrize(
    ("constraint", "good", "bad"),
    [
        ({"func_name": "validate_lowercase", "N": None, "quantifier": None}, "all lower", "Not lower"),
        ({"func_name": "verify_keyword_frequency", "word": "apple", "N": 2}, "apple, Apple!", "apple apple apple"),
        ({"func_name": "validate_word_constraint", "N": 10, "quantifier": "around"}, "w " * 9, "w " * 12),
        ({"func_name": "verify_letter_frequency", "letter": "a", "N": 2}, "aAa", "aa a"),
        ({"func_name": "validate_choice", "options": "('yes', 'no')"}, "I say yes", "maybe"),
        ({"func_name": "validate_two_responses"}, "one ****** two", "one ****** two ****** three"),
        ({"func_name": "validate_paragraphs", "N": 2, "first_word": "Hello", "i": 2}, "A\n\nHello B", "A\n\nB"),
    ],
)
def test_tulu_format(constraint: dict, good: str, bad: str) -> None:
    gt = json.dumps(constraint)
    assert compute_score("allenai/RLVR-IFeval", good, gt)["acc"] is True
    assert compute_score("allenai/RLVR-IFeval", bad, gt)["acc"] is False


@pytest.mark.parametrize(
    ("ground_truth", "message"),
    [
        (_allenai("keywords:made_up", {}), "unknown instruction id 'keywords:made_up'"),
        (_allenai("length_constraints:number_words", {"relation": "at least"}), r"kwargs\.num_words is missing"),
        (_allenai("length_constraints:number_words", {"num_words": 3, "relation": "about"}), "must be one of"),
        (
            _allenai("keywords:letter_frequency", {"letter": "ab", "let_frequency": 1, "let_relation": "at least"}),
            "single ASCII letter",
        ),
        (_allenai("language:response_language", {"language": "klingon"}), "langdetect language code"),
        (_allenai("punctuation:no_comma", {"num_words": 3}), "does not take"),
        (str([{"instruction_id": ["punctuation:no_comma"], "kwargs": [{}, {}]}]), "1 instruction ids but 2"),
        (json.dumps({"func_name": "verify_keywords", "keyword_list": None}), r"keyword_list is missing"),
        (json.dumps({"func_name": "no_such_function"}), "not a Tulu-3 IF function"),
        ("not a literal {", "neither JSON nor a Python literal"),
        ("", "empty"),
        (None, "None"),
        (42, "must be a list"),
        ({"prompt": "x"}, "expected 'instruction_id'"),
    ],
)
def test_malformed_ground_truth_raises_naming_the_field(ground_truth: object, message: str) -> None:
    with pytest.raises(GroundTruthError, match=message) as info:
        compute_score("ifeval", "", ground_truth)
    assert "reward_model.ground_truth" in str(info.value)


def test_row_validation_with_empty_response_returns_a_dict() -> None:
    assert compute_score("ifeval", "", _allenai("punctuation:no_comma", {}))["reason"] == "no_answer"


def test_reasoning_is_not_judged() -> None:
    gt = _allenai("punctuation:no_comma", {})
    assert compute_score("ifeval", "<think>a, b, c</think>No commas", gt)["acc"]
    assert compute_score("ifeval", "<think>never closed", gt)["reason"] == "no_answer"


@pytest.mark.parametrize("response", [None, 3.5, b"\xff\xfe", "\x00" * 1000, "🙂" * 50_000, "\n" * 200_000])
def test_any_response_gets_a_result(response: object) -> None:
    result = compute_score("ifeval", response, _allenai("detectable_format:number_bullet_lists", {"num_bullets": 1}))
    assert set(result) == {"score", "acc", "reason"} and result["acc"] is False


def test_sentence_counts_on_reference_style_text() -> None:
    # Punkt's English model: abbreviations and decimals do not end sentences, as in NLTK's english.pickle.
    assert count_sentences("Dr. Smith went home. He was tired.") == 2
    assert count_sentences("Mr. Brown paid $3.50 for it. Then he left. Okay.") == 3
    assert count_sentences("I live in the U.S. It is big.") == 2
    assert count_sentences(LOREM) == 1


_REF_BULLETS = (re.compile(r"^\s*\*[^\*].*$", re.MULTILINE), re.compile(r"^\s*-.*$", re.MULTILINE))
_TEXT = st.text(alphabet=["*", "-", "\n", " ", "\t", "a", "[", "]", "<", ">"], max_size=40)


@settings(max_examples=3000, deadline=None)
@given(_TEXT)
def test_linear_rewrites_agree_with_reference_regexes(value: str) -> None:
    """The linear-time rewrites give the reference regexes' exact counts (which are quadratic on bad input)."""
    assert count_line_items(value, "*") + count_line_items(value, "-") == sum(
        len(p.findall(value)) for p in _REF_BULLETS
    )
    assert count_placeholders(value) == len(re.findall(r"\[.*?\]", value))
    assert format_title(value) == any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", value))


def test_long_responses_are_checked_in_the_pool_with_the_same_verdicts() -> None:
    from reward_fns.ifeval import IN_PROCESS_MAX_CHARS

    gt = _allenai("length_constraints:number_words", {"num_words": 4000, "relation": "at least"})
    long_text = "word " * 5000
    assert len(long_text) > IN_PROCESS_MAX_CHARS
    assert compute_score("ifeval", long_text, gt) == {"score": 1.0, "acc": True, "reason": ""}
    assert compute_score("ifeval", "word " * 3000, gt)["reason"] == "not_followed:length_constraints:number_words"


# The reference's own test cases (instruction_following_eval/instructions_util_test.py), whose expected
# values come from NLTK's punkt and RegexpTokenizer: the offline tokenizers must give the same counts.
@pytest.mark.parametrize(
    ("response", "sentences"),
    [
        ("xx,x. xx,x! xx/x. x{x}x? x.", 5),
        ("xx,x! xxxx. x(x)x?", 3),
        ("xxxx. xx,x! xx|x. x&x x?", 4),
        ("xx-x]xx,x! x{x}xx,x.", 2),
        (
            "\n  Google is a technology company. It was founded in 1998 by Larry Page\nand Sergey Brin. Google's "
            "mission is to organize the world's information\nand make it universally accessible and useful.\n  ",
            3,
        ),
        (
            "\n  The U.S.A has many Ph.D. students. They will often haven a .com website\nsharing the research "
            "that they have done.\n  ",
            2,
        ),
    ],
)
def test_sentence_counts_match_the_reference_tests(response: str, sentences: int) -> None:
    assert count_sentences(response) == sentences


@pytest.mark.parametrize(
    ("response", "words"),
    [
        ("word1, word2, word3, word4.", 4),
        (
            "\n      Bard can you tell me which is the best optimization method for the\n      transition from an "
            "hydro-thermal system to an hydro-renewables system",
            24,
        ),
        ("\n      Hyphenated-word has two word counts.\n      ", 6),
    ],
)
def test_word_counts_match_the_reference_tests(response: str, words: int) -> None:
    from reward_fns.ifeval.text import count_words

    assert count_words(response) == words
