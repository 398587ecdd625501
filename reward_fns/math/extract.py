"""Find the final answer in a model response (cheap, linear-time, runs in the caller's process).

Rules, in this order:
1. Reasoning tags: when ``</think>`` is present only the text after the last one counts; an opened
   ``<think>`` that never closes means the response ran out inside its reasoning: no answer.
2. Candidates: the last ``\\boxed{...}`` / ``\\fbox{...}`` (nested braces matched), the last
   ``Answer: ...`` line (the DAPO-Math prompt asks for one), the last "the final answer is ...".
3. The candidate that starts last in the text wins (``Answer: \\boxed{5}`` and
   "The final answer is $\\boxed{5}$" therefore both yield ``5``).
"""

from __future__ import annotations

import re

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_ANSWER_LINE = re.compile(r"(?im)^[ \t>*#_]*(?:final[ \t]+)?answer[ \t*_]*[:：][ \t*_]*([^\n]*)$")
_FINAL_ANSWER_IS = re.compile(r"(?i)final answer is[ \t:]*([^\n]*)")
_TRAILING_HOPE = re.compile(r"(?i)[.,;]?\s*I hope it is correct.*$")
_BRACE = re.compile(r"[{}]")
# Bounds that keep extraction linear on adversarial responses (10 MB of unclosed braces).
_MAX_BOX_CHARS = 2_000_000
_MAX_BOX_ATTEMPTS = 4
_MATH_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))


def strip_reasoning(text: str) -> str | None:
    """Text after the last ``</think>``; ``None`` when a ``<think>`` block never closes."""
    end = text.rfind("</think>")
    if end >= 0:
        return text[end + len("</think>") :]
    if "<think>" in text:
        return None
    return text


def _braced(text: str, open_index: int) -> str | None:
    """Content of the brace group opening at ``open_index`` (nested braces balanced), else None."""
    depth = 0
    # The regex skips the text between braces in C; a box is looked for within a bounded window.
    for match in _BRACE.finditer(text, open_index, open_index + _MAX_BOX_CHARS):
        if match.group() == "{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return text[open_index + 1 : match.start()]
    return None


def last_boxed(text: str) -> tuple[int, str] | None:
    """Position and content of the last complete ``\\boxed``/``\\fbox`` (``\\boxed 5`` form too)."""
    end = len(text)
    for _ in range(_MAX_BOX_ATTEMPTS):
        start = max(text.rfind(command, 0, end) for command in _BOX_COMMANDS)
        if start < 0:
            return None
        command = next(c for c in _BOX_COMMANDS if text.startswith(c, start))
        after = start + len(command)
        rest = text[after : after + 1]
        if rest == "{":
            content = _braced(text, after)
            if content is not None:
                return start, content
        elif rest == " ":
            token = text[after + 1 :].split(maxsplit=1)
            if token:
                return start, token[0].rstrip("$.")
        end = start  # truncated or malformed box: look further left
    return None


def _last_match(pattern: re.Pattern[str], text: str) -> tuple[int, str] | None:
    found = None
    for found in pattern.finditer(text):  # noqa: B007 - we want the last one
        pass
    return (found.start(), found.group(1)) if found else None


def clean_answer(answer: str) -> str:
    answer = _TRAILING_HOPE.sub("", answer).strip()
    inner = last_boxed(answer)
    if inner is not None:
        answer = inner[1]
    answer = answer.strip().strip("*").strip()
    for left, right in _MATH_DELIMITERS:
        if len(answer) >= len(left) + len(right) and answer.startswith(left) and answer.endswith(right):
            answer = answer[len(left) : len(answer) - len(right)].strip()
            break
    return answer.rstrip(".").strip()


def extract_answer(response: str) -> str | None:
    """The final answer of ``response``, or ``None`` when it gives none."""
    text = strip_reasoning(response)
    if text is None:
        return None
    found = (last_boxed(text), _last_match(_ANSWER_LINE, text), _last_match(_FINAL_ANSWER_IS, text))
    candidates = [candidate for candidate in found if candidate]
    if not candidates:
        return None
    _, answer = max(candidates, key=lambda candidate: candidate[0])
    answer = clean_answer(answer)
    return answer or None
