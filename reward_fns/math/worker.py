"""The part of math scoring that may run for ever: math-verify parsing and sympy comparison.

Runs only inside :mod:`reward_fns.bounded` worker processes, which enforce the time bound; math-verify's own
``signal.alarm`` timeouts are therefore disabled (``parsing_timeout=None``, ``timeout_seconds=None``).
"""

from __future__ import annotations

import logging

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

# math-verify warns on every call that its own timeouts are off; the pool enforces the bound instead.
logging.getLogger("math_verify").setLevel(logging.ERROR)

_CONFIG = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())
_PERCENT_SUFFIXES = ("\\%", "%")


def _parse_boxed(text: str) -> list:
    return parse("\\boxed{" + text + "}", _CONFIG, parsing_timeout=None)


def _matches(golds: list[list], answer: str) -> bool:
    pred = _parse_boxed(answer)
    if not pred:
        return False
    # Gold first: math-verify's verify is not symmetric.
    return any(verify(gold, pred, timeout_seconds=None) for gold in golds)


def verify_answer(gold_answers: tuple[str, ...], answer: str) -> tuple[bool, str]:
    """Return ``(correct, reason)`` for an extracted answer against the acceptable gold answers."""
    golds = [g for g in (_parse_boxed(text) for text in gold_answers) if g]
    if not golds:
        # A gold math-verify cannot read (free text): exact comparison after whitespace removal.
        squeeze = "".join(answer.split())
        ok = any(squeeze == "".join(text.split()) for text in gold_answers)
        return ok, "" if ok else "mismatch"
    if _matches(golds, answer):
        return True, ""
    stripped = answer.strip().rstrip(".").strip()
    for suffix in _PERCENT_SUFFIXES:
        # "50\%" for a gold of 50 (the unit left on) or of 0.5 (the ratio): math-verify reads neither.
        if stripped.endswith(suffix):
            number = stripped[: -len(suffix)].strip()
            if _matches(golds, number) or _matches(golds, "(" + number + ")/100"):
                return True, ""
            break
    if not _parse_boxed(answer):
        return False, "parse_error"
    return False, "mismatch"


# Warm up at import: this module is preloaded into the forkserver, so every worker (including one that
# replaces a worker killed on timeout) starts with the LaTeX grammar and sympy caches already built.
verify_answer(("\\frac{1}{2}",), "0.5")
verify_answer(("(1,2)",), "\\{x\\}")
