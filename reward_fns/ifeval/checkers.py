"""The 25 IFEval instructions (Zhou et al. 2023, arXiv 2311.07911), with the reference's semantics.

Each checker is ``check(response, **params) -> bool`` and mirrors Google's ``instruction_following_eval``
``check_following``. Deliberate differences, all on inputs the reference mishandles:
- keywords are matched literally (the reference feeds them to ``re`` unescaped: ``C++`` would crash it);
- every parameter is required (the reference silently draws a random one);
- sentence and word tokenisation are offline (see :mod:`reward_fns.ifeval.text`).
"""

from __future__ import annotations

import json
import re

from reward_fns.ifeval import text
from reward_fns.ifeval.registry import RELATIONS, register

_CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _compare(count: int, relation: str, threshold: int) -> bool:
    return count < threshold if relation == RELATIONS[0] else count >= threshold


def _literal(word: str) -> str:
    return re.escape(word)


_NOT_SPACE = re.compile(r"\S")


def count_line_items(response: str, marker: str) -> int:
    r"""Matches of the reference's findall(r"^\s*<marker>...$", MULTILINE) in linear time.

    ``^\s*`` may cross blank lines, so the regex is quadratic on many blank lines; every line start inside
    one whitespace run reaches the same first non-space character, so each run is examined once. For
    ``*`` the reference requires a following non-``*`` character (which may be a newline, in which case
    ``.*$`` consumes the next line); ``-`` needs nothing more.
    """
    count, line_start, n = 0, 0, len(response)
    while line_start <= n:
        found = _NOT_SPACE.search(response, line_start)
        if found is None:
            break
        first = found.start()
        if response[first] == marker and (marker != "*" or (first + 1 < n and response[first + 1] != "*")):
            count += 1
            rest = first + 1 if marker != "*" else first + 2
            end = response.find("\n", rest)
            if end < 0:
                break
            # The match ends at that newline; resuming just after it finds the same next match.
            line_start = end + 1
        else:
            newline = response.find("\n", first)
            if newline < 0:
                break
            line_start = newline + 1
    return count


def count_placeholders(response: str) -> int:
    r"""Matches of findall(r"\[.*?\]") in linear time: "[" to the nearest "]" on the same line."""
    count, pos = 0, 0
    while True:
        start = response.find("[", pos)
        if start < 0:
            return count
        newline = response.find("\n", start)
        close = response.find("]", start + 1, newline if newline >= 0 else len(response))
        if close >= 0:
            count += 1
            pos = close + 1
        elif newline >= 0:
            pos = newline + 1
        else:
            return count


# --- keywords ---------------------------------------------------------------------------------------------
@register("keywords:existence", keywords="str_list")
def keywords_existence(response: str, keywords: tuple[str, ...]) -> bool:
    return all(re.search(_literal(k), response, flags=re.IGNORECASE) for k in keywords)


@register("keywords:frequency", keyword="str", frequency="int", relation="relation")
def keywords_frequency(response: str, keyword: str, frequency: int, relation: str) -> bool:
    count = len(re.findall(_literal(keyword.strip()), response, flags=re.IGNORECASE))
    return _compare(count, relation, frequency)


@register("keywords:forbidden_words", forbidden_words="str_list")
def keywords_forbidden_words(response: str, forbidden_words: tuple[str, ...]) -> bool:
    return not any(re.search(r"\b" + _literal(w) + r"\b", response, flags=re.IGNORECASE) for w in set(forbidden_words))


@register("keywords:letter_frequency", letter="letter", let_frequency="int", let_relation="relation")
def keywords_letter_frequency(response: str, letter: str, let_frequency: int, let_relation: str) -> bool:
    return _compare(response.lower().count(letter), let_relation, let_frequency)


# --- language ---------------------------------------------------------------------------------------------
@register("language:response_language", language="language")
def language_response_language(response: str, language: str) -> bool:
    detected = text.detect_language(response)
    return detected is None or detected == language  # reference: undetectable text counts as followed


# --- length constraints -----------------------------------------------------------------------------------
@register("length_constraints:number_sentences", num_sentences="int", relation="relation")
def length_number_sentences(response: str, num_sentences: int, relation: str) -> bool:
    return _compare(text.count_sentences(response), relation, num_sentences)


@register("length_constraints:number_paragraphs", num_paragraphs="int")
def length_number_paragraphs(response: str, num_paragraphs: int) -> bool:
    paragraphs = re.split(r"\s?\*\*\*\s?", response)
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index in (0, len(paragraphs) - 1):
                count -= 1
            else:
                return False
    return count == num_paragraphs


@register("length_constraints:number_words", num_words="int", relation="relation")
def length_number_words(response: str, num_words: int, relation: str) -> bool:
    return _compare(text.count_words(response), relation, num_words)


@register("length_constraints:nth_paragraph_first_word", num_paragraphs="int", nth_paragraph="int", first_word="str")
def length_nth_paragraph_first_word(response: str, num_paragraphs: int, nth_paragraph: int, first_word: str) -> bool:
    paragraphs = re.split(r"\n\n", response)
    count = sum(1 for p in paragraphs if p.strip())
    if not 1 <= nth_paragraph <= count:
        return False
    # Reference quirk kept: the nth split piece, counting empty pieces, is the paragraph looked at.
    paragraph = paragraphs[nth_paragraph - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for letter in word:
        if letter in {".", ",", "?", "!", "'", '"'}:
            break
        first += letter.lower()
    return count == num_paragraphs and first == first_word.lower()


# --- detectable content -----------------------------------------------------------------------------------
@register("detectable_content:number_placeholders", num_placeholders="int")
def content_number_placeholders(response: str, num_placeholders: int) -> bool:
    return count_placeholders(response) >= num_placeholders


@register("detectable_content:postscript", postscript_marker="str")
def content_postscript(response: str, postscript_marker: str) -> bool:
    # The reference's findall(r"\s*<marker>.*$", MULTILINE) is non-empty exactly when the marker occurs:
    # the optional prefix and the rest of the line always match. Searching the marker alone is the same
    # verdict in linear time (the prefix form is quadratic on long whitespace runs).
    marker = postscript_marker.strip()
    lowered = response.lower()
    if marker == "P.P.S":
        return bool(re.search(r"p\.\s?p\.\s?s", lowered))
    if marker == "P.S.":
        return bool(re.search(r"p\.\s?s\.", lowered))
    return marker.lower() in lowered


# --- detectable format ------------------------------------------------------------------------------------
@register("detectable_format:number_bullet_lists", num_bullets="int")
def format_number_bullet_lists(response: str, num_bullets: int) -> bool:
    return count_line_items(response, "*") + count_line_items(response, "-") == num_bullets


@register("detectable_format:constrained_response")
def format_constrained_response(response: str) -> bool:
    stripped = response.strip()
    return any(option in stripped for option in _CONSTRAINED_RESPONSES)


@register("detectable_format:number_highlighted_sections", num_highlights="int")
def format_number_highlighted_sections(response: str, num_highlights: int) -> bool:
    count = sum(1 for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip())
    count += sum(1 for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h[2:-2].strip())
    return count >= num_highlights


@register("detectable_format:multiple_sections", section_spliter="str", num_sections="int")
def format_multiple_sections(response: str, section_spliter: str, num_sections: int) -> bool:
    pattern = r"\s?" + _literal(section_spliter.strip()) + r"\s?\d+\s?"
    return len(re.split(pattern, response)) - 1 >= num_sections


@register("detectable_format:json_format")
def format_json(response: str) -> bool:
    value = response.strip()
    for prefix in ("```json", "```Json", "```JSON", "```"):
        if value.startswith(prefix):
            value = value[len(prefix) :]
            break
    value = value.removesuffix("```").strip()
    try:
        json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting, not a JSON answer
        return False
    return True


@register("detectable_format:title")
def format_title(response: str) -> bool:
    # findall(r"<<[^\n]+>>") yields at most one (greedy) match per line: first "<<" to last ">>".
    for line in response.split("\n"):
        start = line.find("<<")
        end = line.rfind(">>")
        if start >= 0 and end >= start + 3 and line[start : end + 2].lstrip("<").rstrip(">").strip():
            return True
    return False


# --- combination ------------------------------------------------------------------------------------------
@register("combination:two_responses")
def combination_two_responses(response: str) -> bool:
    parts = response.split("******")
    valid = []
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
        else:
            valid.append(part)
    return len(valid) == 2 and valid[0].strip() != valid[1].strip()


@register("combination:repeat_prompt", prompt_to_repeat="str")
def combination_repeat_prompt(response: str, prompt_to_repeat: str) -> bool:
    return response.strip().lower().startswith(prompt_to_repeat.strip().lower())


# --- start / end ------------------------------------------------------------------------------------------
@register("startend:end_checker", end_phrase="str")
def startend_end_checker(response: str, end_phrase: str) -> bool:
    return response.strip().strip('"').lower().endswith(end_phrase.strip().lower())


@register("startend:quotation")
def startend_quotation(response: str) -> bool:
    value = response.strip()
    return len(value) > 1 and value[0] == '"' and value[-1] == '"'


# --- change case ------------------------------------------------------------------------------------------
@register("change_case:capital_word_frequency", capital_frequency="int", capital_relation="relation")
def case_capital_word_frequency(response: str, capital_frequency: int, capital_relation: str) -> bool:
    count = sum(1 for word in text.word_tokens(response) if word.isupper())
    return _compare(count, capital_relation, capital_frequency)


@register("change_case:english_capital")
def case_english_capital(response: str) -> bool:
    if not response.isupper():
        return False
    detected = text.detect_language(response)
    return detected is None or detected == "en"


@register("change_case:english_lowercase")
def case_english_lowercase(response: str) -> bool:
    if not response.islower():
        return False
    detected = text.detect_language(response)
    return detected is None or detected == "en"


# --- punctuation ------------------------------------------------------------------------------------------
@register("punctuation:no_comma")
def punctuation_no_comma(response: str) -> bool:
    return "," not in response


IFEVAL_IDS = (
    "keywords:existence",
    "keywords:frequency",
    "keywords:forbidden_words",
    "keywords:letter_frequency",
    "language:response_language",
    "length_constraints:number_sentences",
    "length_constraints:number_paragraphs",
    "length_constraints:number_words",
    "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders",
    "detectable_content:postscript",
    "detectable_format:number_bullet_lists",
    "detectable_format:constrained_response",
    "detectable_format:number_highlighted_sections",
    "detectable_format:multiple_sections",
    "detectable_format:json_format",
    "detectable_format:title",
    "combination:two_responses",
    "combination:repeat_prompt",
    "startend:end_checker",
    "startend:quotation",
    "change_case:capital_word_frequency",
    "change_case:english_capital",
    "change_case:english_lowercase",
    "punctuation:no_comma",
)
