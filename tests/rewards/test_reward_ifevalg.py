"""The 29 IFEvalG instructions beyond IFEval: each passing and failing, through the public entry point."""

from __future__ import annotations

import pytest

from reward_fns import compute_score
from reward_fns.ifeval.ifevalg import IFEVALG_EXTRA_IDS

PROMPT = "Write a haiku about rain."
CASES = [
    (
        "copy:repeat_phrase",
        {"phrase": "the quick fox runs", "small_n": 2},
        "the slow fox runs and the quick cat runs",
        "the quick fox runs twice: the quick fox runs",
    ),
    ("copy:copy", {"prompt_to_repeat": PROMPT}, "write a haiku about rain.", "Rain falls softly."),
    ("new:copy_span_idx", {"prompt_to_repeat": PROMPT, "n_start": 0, "n_end": 6}, "Write a", "Write a haiku"),
    ("detectable_format:sentence_hyphens", {}, "One.-Two.-Three.", "One. - Two."),
    ("keywords:no_adjacent_consecutive", {}, "apple cat egg", "apple banana"),
    ("detectable_format:square_brackets", {}, "[all] [in] [brackets]", "[all] in [brackets]"),
    ("keywords:word_once", {"keyword": "rain"}, "The rain falls.", "Rain, rain, go away."),
    (
        "keywords:word_count_different_numbers",
        {"keyword": "rain", "frequency": 2, "relation": "at least"},
        "rain and rain",
        "rain only",
    ),
    (
        "keywords:exclude_word_harder",
        {"keyword": "rain", "instruction": "Write about rain"},
        "Sunny day.",
        "It will Rain.",
    ),
    ("paragraphs:paragraphs", {}, "First.\n***\nSecond.", "Only one."),
    ("paragraphs:paragraphs2", {}, "First.\n\nSecond.", "First.\n\n\n\nSecond."),
    ("first_word:first_word_sent", {"first_word": ["So"]}, "So it rains. So it goes.", "So it rains. It goes."),
    ("first_word:first_word_answer", {"first_word": "Indeed"}, "indeed it is.", "Yes indeed."),
    ("last_word:last_word_sent", {"last_word": "now"}, "Rain falls now. Stop now!", "Rain falls now. Stop."),
    ("last_word:last_word_answer", {"last_word": "end"}, "This is the END!!", "The end is near."),
    ("detectable_format:bigram_wrapping", {}, "<<I am>> <<at home>>", "<<I am at>> <<home>>"),
    ("copy:copying_simple", {"prompt_to_repeat": PROMPT}, " Write a haiku about rain. ", "A haiku."),
    ("copy:copying_multiple", {"prompt_to_repeat": PROMPT, "N": 2}, f"{PROMPT}******{PROMPT}", PROMPT),
    ("punctuation:punctuation_dot", {}, "No dots here", "A dot."),
    ("punctuation:punctuation_exclamation", {}, "Calm.", "Wow!"),
    ("count:lowercase_counting", {"N": 2}, "ONE two THREE four", "one two three"),
    ("letters:letter_counting", {"N": 5, "relation": "less than"}, "abcd", "abcde"),
    ("letters:letter_counting2", {"letter": "r", "let_frequency": 2, "let_relation": "at least"}, "rRain", "rain"),
    (
        "count:counting_composition",
        {"n_sent": 2, "n_words": 4},  # NLTK-style tokens: the period counts
        "I like rain. You like sun.\n***\nWe are here. They are there.\n***\nIt is wet. It is dry.",
        "I like rain. You like sun.\n***\nWe are here.",
    ),
    ("count:count_unique", {}, "every word differs here", "the rain and the sun"),
    ("count:count_increment_word", {"keyword1": "sun", "keyword2": "rain"}, "sun, rain, rain", "sun rain"),
    ("keywords:palindrome", {}, "A racecar passed.", "No such word."),
    (
        "keywords:keyword_specific_position",
        {"keyword": "rain", "n": 2, "m": 3},
        "Hello there. I love rain today.",
        "Hello there. I love sun today.",
    ),
    ("keywords:start_end", {}, "Rain is falling on the rain", "Rain is falling."),
]


def test_cases_cover_all_29_ids() -> None:
    assert len(IFEVALG_EXTRA_IDS) == 29
    assert {case[0] for case in CASES} == set(IFEVALG_EXTRA_IDS)


@pytest.mark.parametrize(("instruction_id", "kwargs", "good", "bad"), CASES)
def test_each_ifevalg_instruction_passes_and_fails(instruction_id: str, kwargs: dict, good: str, bad: str) -> None:
    gt = str([{"instruction_id": [instruction_id], "kwargs": [kwargs]}])
    assert compute_score("allenai/IFEvalG", good, gt)["acc"] is True, good
    assert compute_score("allenai/IFEvalG", bad, gt)["reason"] == f"not_followed:{instruction_id}", bad
