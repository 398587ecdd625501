"""The 29 instructions AllenAI's IFEvalG (open-instruct) adds to IFEval, as used in its RLVR training sets.

Semantics follow open-instruct's ``IFEvalG/instructions.py``. Deliberate differences: sentences are split
with the offline Punkt model (:mod:`reward_fns.ifeval.text`) instead of the reference's regex splitter, and
NLTK's word tokenizer is replaced by the Treebank-style regex of :func:`reward_fns.ifeval.text.word_tokens`;
every parameter is required (no random default).
"""

from __future__ import annotations

import itertools
import re
import unicodedata

from reward_fns.ifeval import text
from reward_fns.ifeval.checkers import keywords_letter_frequency
from reward_fns.ifeval.registry import RELATIONS, register


def _word_count(word: str, response: str) -> int:
    return len(re.findall(r"\b" + re.escape(word.strip()) + r"\b", response, flags=re.IGNORECASE))


def _paragraph_count(parts: list[str]) -> int | None:
    """Pieces between separators, empty first/last allowed; an empty middle piece makes it invalid (None)."""
    count = len(parts)
    for index, part in enumerate(parts):
        if not part.strip():
            if index in (0, len(parts) - 1):
                count -= 1
            else:
                return None
    return count


@register("copy:repeat_phrase", phrase="str", small_n="int")
def repeat_phrase(response: str, phrase: str, small_n: int) -> bool:
    reference = phrase.strip().split()
    first, last = reference[0], reference[-1]
    if last not in response:  # no match possible; also keeps the lazy scan below from going quadratic
        return False
    found = re.findall(rf"{re.escape(first)} .*? {re.escape(last)}", response)
    if len(found) != small_n:
        return False
    for candidate in found:
        tokens = candidate.split()
        if len(tokens) != len(reference) or sum(a != b for a, b in zip(tokens, reference, strict=True)) != 1:
            return False
    return True


@register("copy:copy", prompt_to_repeat="str")
def copy_copy(response: str, prompt_to_repeat: str) -> bool:
    return response.strip().lower() == prompt_to_repeat.strip().lower()


@register("new:copy_span_idx", prompt_to_repeat="str", n_start="int", n_end="int")
def copy_span_idx(response: str, prompt_to_repeat: str, n_start: int, n_end: int) -> bool:
    return response.strip().lower() == prompt_to_repeat[n_start : n_end + 1].strip().lower()


@register("detectable_format:sentence_hyphens")
def sentence_hyphens(response: str) -> bool:
    parts = response.split("-")
    return len(parts) >= 2 and all(p.strip() == p and " " not in p for p in parts)


@register("keywords:no_adjacent_consecutive")
def no_adjacent_consecutive(response: str) -> bool:
    words = response.split()
    for left, right in itertools.pairwise(words):
        a, b = left[0].lower(), right[0].lower()
        if len(a) != 1 or len(b) != 1 or ord(b) - ord(a) == 1:  # "İ".lower() has two characters
            return False
    return True


@register("detectable_format:square_brackets")
def square_brackets(response: str) -> bool:
    return all(w.startswith("[") and w.endswith("]") for w in response.split())


@register("keywords:word_once", keyword="str")
def word_once(response: str, keyword: str) -> bool:
    return _word_count(keyword, response) == 1


@register("keywords:word_count_different_numbers", keyword="str", frequency="int", relation="relation")
def word_count_different_numbers(response: str, keyword: str, frequency: int, relation: str) -> bool:
    count = _word_count(keyword, response)
    return count < frequency if relation == RELATIONS[0] else count >= frequency


@register("keywords:exclude_word_harder", keyword="str", instruction="ignored")
def exclude_word_harder(response: str, keyword: str) -> bool:
    return _word_count(keyword, response) == 0


@register("paragraphs:paragraphs")
def paragraphs_divider(response: str) -> bool:
    return _paragraph_count(re.split(r"\s?\*\*\*\s?", response)) == 2


@register("paragraphs:paragraphs2")
def paragraphs_blank_line(response: str) -> bool:
    return _paragraph_count(re.split(r"\n\n", response)) == 2


@register("first_word:first_word_sent", first_word="word_or_list")
def first_word_sent(response: str, first_word: str) -> bool:
    for sentence in text.split_sentences(response):
        if not sentence.strip() or sentence.split()[0].strip().lower() != first_word.strip().lower():
            return False
    return True


@register("first_word:first_word_answer", first_word="str")
def first_word_answer(response: str, first_word: str) -> bool:
    return bool(response.strip()) and response.split()[0].strip().lower() == first_word.strip().lower()


@register("last_word:last_word_sent", last_word="word_or_list")
def last_word_sent(response: str, last_word: str) -> bool:
    for sentence in text.split_sentences(response):
        if not sentence.strip():
            return False
        word = re.sub(r"[^\w\s]", "", sentence.split()[-1].strip())
        if word.lower() != last_word.strip().lower():
            return False
    return True


@register("last_word:last_word_answer", last_word="str")
def last_word_answer(response: str, last_word: str) -> bool:
    tokens = [t for t in re.split(r"[^A-Za-z0-9]+", unicodedata.normalize("NFKC", response).strip()) if t]
    return bool(tokens) and tokens[-1].lower() == last_word.strip().lower()


@register("detectable_format:bigram_wrapping")
def bigram_wrapping(response: str) -> bool:
    words = response.split()
    if len(words) % 2:
        return False
    for left, right in zip(words[::2], words[1::2], strict=True):
        if not (left.startswith("<<") and right.endswith(">>")) or left.endswith(">>") or right.startswith("<<"):
            return False
    return True


@register("copy:copying_simple", prompt_to_repeat="str")
def copying_simple(response: str, prompt_to_repeat: str) -> bool:
    return response.strip().lower() == prompt_to_repeat.strip().lower()


@register("copy:copying_multiple", prompt_to_repeat="str", N="int")
def copying_multiple(response: str, prompt_to_repeat: str, N: int) -> bool:
    parts = response.split("******")
    target = prompt_to_repeat.strip().lower()
    return len(parts) == N and all(p.strip().lower() == target for p in parts)


@register("punctuation:punctuation_dot")
def punctuation_dot(response: str) -> bool:
    return "." not in response


@register("punctuation:punctuation_exclamation")
def punctuation_exclamation(response: str) -> bool:
    return "!" not in response


@register("count:lowercase_counting", N="int")
def lowercase_counting(response: str, N: int) -> bool:
    return len(re.findall(r"\b[a-z]+\b", response)) <= N


@register("letters:letter_counting", N="int", relation="relation")
def letter_counting(response: str, N: int, relation: str) -> bool:
    count = len(re.findall(r"[A-Za-z]", response))
    return count >= N if relation == "at least" else count < N


@register("letters:letter_counting2", letter="letter", let_frequency="int", let_relation="relation")
def letter_counting2(response: str, letter: str, let_frequency: int, let_relation: str) -> bool:
    return keywords_letter_frequency(response, letter, let_frequency, let_relation)


@register("count:counting_composition", n_sent="int", n_words="int")
def counting_composition(response: str, n_sent: int, n_words: int) -> bool:
    parts = re.split(r"\s?\*\*\*\s?", response)
    if _paragraph_count(parts) != 3:
        return False
    for part in parts:
        if not part.strip():
            continue  # an empty first/last piece (already validated above)
        sentences = text.split_sentences(part)
        if len(sentences) != n_sent or any(len(text.word_tokens(s)) != n_words for s in sentences):
            return False
    return True


@register("count:count_unique")
def count_unique(response: str) -> bool:
    words = text.word_tokens(response)
    return len(words) == len(set(words))


@register("count:count_increment_word", keyword1="str", keyword2="str")
def count_increment_word(response: str, keyword1: str, keyword2: str) -> bool:
    return _word_count(keyword1, response) == 1 and _word_count(keyword2, response) == 2


@register("keywords:palindrome")
def palindrome(response: str) -> bool:
    return any(len(w) > 1 and w == w[::-1] for w in response.split())


@register("keywords:keyword_specific_position", keyword="str", n="int", m="int")
def keyword_specific_position(response: str, keyword: str, n: int, m: int) -> bool:
    sentences = text.split_sentences(response)
    if n < 1 or m < 1 or len(sentences) < n:
        return False
    words = [w for w in text.word_tokens(sentences[n - 1]) if w.strip()]
    return len(words) >= m and re.sub(r"\W+$", "", words[m - 1]).lower() == keyword.strip().lower()


@register("keywords:start_end")
def start_end(response: str) -> bool:
    hyphenated = "-" in response and " " not in response.strip()  # "a-b-a": hyphen-joined words
    words = [w for w in (response.split("-") if hyphenated else text.word_tokens(response)) if w.strip()]
    return len(words) >= 2 and words[0].lower() == words[-1].lower()


IFEVALG_EXTRA_IDS = (
    "copy:repeat_phrase",
    "copy:copy",
    "new:copy_span_idx",
    "detectable_format:sentence_hyphens",
    "keywords:no_adjacent_consecutive",
    "detectable_format:square_brackets",
    "keywords:word_once",
    "keywords:word_count_different_numbers",
    "keywords:exclude_word_harder",
    "paragraphs:paragraphs",
    "paragraphs:paragraphs2",
    "first_word:first_word_sent",
    "first_word:first_word_answer",
    "last_word:last_word_sent",
    "last_word:last_word_answer",
    "detectable_format:bigram_wrapping",
    "copy:copying_simple",
    "copy:copying_multiple",
    "punctuation:punctuation_dot",
    "punctuation:punctuation_exclamation",
    "count:lowercase_counting",
    "letters:letter_counting",
    "letters:letter_counting2",
    "count:counting_composition",
    "count:count_unique",
    "count:count_increment_word",
    "keywords:palindrome",
    "keywords:keyword_specific_position",
    "keywords:start_end",
)
