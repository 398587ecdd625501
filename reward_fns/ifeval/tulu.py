"""Tulu-3 RLVR-IFeval constraints: ground truth ``{"func_name": ..., <args>}`` (one constraint per prompt).

The data set's prompts were written for open-instruct's ``if_functions`` semantics, which differ from IFEval's
("appear N times" means exactly N, "around" is +-10 %, letters are case-sensitive, ...): these checkers
follow those semantics. Arguments that are null in the row are not the function's; a required one that is
null is a data bug and raises.
"""

from __future__ import annotations

import json
import re

from reward_fns.ifeval import text
from reward_fns.ifeval.checkers import count_placeholders
from reward_fns.ifeval.registry import REGISTRY, register

PREFIX = "tulu:"


def _quantified(count: int, n: int, quantifier: str, around: int) -> bool:
    if quantifier == "at least":
        return count >= n
    if quantifier == "at most":
        return count <= n
    return abs(count - n) <= around


@register(PREFIX + "verify_keywords", keyword_list="str_list")
def verify_keywords(response: str, keyword_list: tuple[str, ...]) -> bool:
    lowered = response.lower()
    return all(k.lower() in lowered for k in keyword_list)


@register(PREFIX + "verify_keyword_frequency", word="str", N="int")
def verify_keyword_frequency(response: str, word: str, N: int) -> bool:
    target = word.lower()
    return sum(1 for w in re.findall(r"\b\w+\b", response.lower()) if w == target) == N


@register(PREFIX + "validate_forbidden_words", forbidden_words="str_list")
def validate_forbidden_words(response: str, forbidden_words: tuple[str, ...]) -> bool:
    lowered = response.lower()
    return not any(w.lower() in lowered for w in forbidden_words)


@register(PREFIX + "verify_letter_frequency", letter="char", N="int")
def verify_letter_frequency(response: str, letter: str, N: int) -> bool:
    return response.count(letter) == N


@register(PREFIX + "validate_response_language", language="language")
def validate_response_language(response: str, language: str) -> bool:
    return text.detect_language(response) == language


@register(PREFIX + "verify_paragraph_count", N="int")
def verify_paragraph_count(response: str, N: int) -> bool:
    cleaned = "\n".join(line.strip() for line in response.splitlines()).strip()
    paragraphs = cleaned.split("* * *")
    return all(p.strip() for p in paragraphs) and len(paragraphs) == N


@register(PREFIX + "validate_word_constraint", N="int", quantifier="quantifier")
def validate_word_constraint(response: str, N: int, quantifier: str) -> bool:
    return _quantified(len(response.split()), N, quantifier, max(round(N * 0.1), 1))


@register(PREFIX + "verify_sentence_constraint", N="int", quantifier="quantifier")
def verify_sentence_constraint(response: str, N: int, quantifier: str) -> bool:
    sentences = re.split(r"(?<!\w\.\w.)(?<![A-Z][a-z]\.)(?<=\.|\?|!)\s", response)
    return _quantified(len(sentences), N, quantifier, 1)


@register(PREFIX + "validate_paragraphs", N="int", first_word="str", i="int")
def validate_paragraphs(response: str, N: int, first_word: str, i: int) -> bool:
    paragraphs = response.split("\n\n")
    if len(paragraphs) != N or not 1 <= i <= N:
        return False
    return paragraphs[i - 1].strip().startswith(first_word)


@register(PREFIX + "verify_postscript", postscript_marker="str")
def verify_postscript(response: str, postscript_marker: str) -> bool:
    index = response.find(postscript_marker)
    return index >= 0 and len(response[index:].strip()) > len(postscript_marker)


@register(PREFIX + "validate_placeholders", N="int")
def validate_placeholders(response: str, N: int) -> bool:
    return count_placeholders(response) >= N  # findall(r"\[(.*?)\]"), linear


@register(PREFIX + "verify_bullet_points", N="int")
def verify_bullet_points(response: str, N: int) -> bool:
    return sum(1 for line in response.split("\n") if line.strip().startswith(("*", "-"))) == N


@register(PREFIX + "validate_title")
def validate_title(response: str) -> bool:
    # re.search(r"<<(.*?)>>"), linear: a ">>" after the first "<<" of some line.
    for line in response.split("\n"):
        start = line.find("<<")
        if start >= 0 and line.find(">>", start + 2) >= 0:
            return True
    return False


@register(PREFIX + "validate_choice", options="options")
def validate_choice(response: str, options: tuple[str, ...]) -> bool:
    return any(option in response for option in options)


@register(PREFIX + "validate_highlighted_sections", N="int")
def validate_highlighted_sections(response: str, N: int) -> bool:
    return len(re.findall(r"\*(.*?)\*", response)) >= N


@register(PREFIX + "validate_sections", N="int", section_splitter="str")
def validate_sections(response: str, N: int, section_splitter: str) -> bool:
    pattern = r"\s?" + re.escape(section_splitter) + r"\s?\d+\s?"
    return len(re.split(pattern, response, flags=re.IGNORECASE)) - 1 >= N


@register(PREFIX + "validate_json_format")
def validate_json_format(response: str) -> bool:
    try:
        json.loads(response)
    except (ValueError, RecursionError):
        return False
    return True


@register(PREFIX + "validate_repeat_prompt", original_prompt="str")
def validate_repeat_prompt(response: str, original_prompt: str) -> bool:
    return response.startswith(original_prompt)


@register(PREFIX + "validate_two_responses")
def validate_two_responses(response: str) -> bool:
    if response.count("******") != 1:
        return False
    first, second = response.split("******")
    return first.strip() != second.strip()


@register(PREFIX + "validate_uppercase")
def validate_uppercase(response: str) -> bool:
    return response == response.upper()


@register(PREFIX + "validate_lowercase")
def validate_lowercase(response: str) -> bool:
    return response == response.lower()


@register(PREFIX + "validate_frequency_capital_words", N="int", quantifier="quantifier")
def validate_frequency_capital_words(response: str, N: int, quantifier: str) -> bool:
    return _quantified(len(re.findall(r"\b[A-Z]+\b", response)), N, quantifier, max(round(N * 0.1), 1))


@register(PREFIX + "validate_end", end_phrase="str")
def validate_end(response: str, end_phrase: str) -> bool:
    return response.endswith(end_phrase)


@register(PREFIX + "validate_quotation")
def validate_quotation(response: str) -> bool:
    return response.startswith('"') and response.endswith('"')


@register(PREFIX + "validate_no_commas")
def validate_no_commas(response: str) -> bool:
    return "," not in response


# The data set's func_name values, derived from the registry.
TULU_FUNC_NAMES = tuple(sorted(name[len(PREFIX) :] for name in REGISTRY if name.startswith(PREFIX)))
