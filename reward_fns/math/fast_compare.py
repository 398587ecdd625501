"""Exact in-process comparison for plain numbers, so the common case never pays a process round trip.

Most math RL answers are integers or simple decimals/fractions. When both the gold and the extracted
answer are such numbers they are compared exactly with :class:`fractions.Fraction`; anything else
(symbols, sets, intervals, units, ...) returns ``None`` and goes to math-verify in the bounded pool.
"""

from __future__ import annotations

import re
from fractions import Fraction

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")
_FRACTION = re.compile(r"([-+]?)\\[dt]?frac\{([-+]?\d+)\}\{([-+]?\d+)\}|([-+]?\d+)/(\d+)")
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_MAX_DIGITS = 200  # longer "numbers" go to the pool (and its time bound)


def _normalise(text: str) -> str:
    text = text.strip().replace("{,}", ",").replace("\\!", "").replace("\\,", "").replace(" ", "")
    if text.startswith("\\$"):
        text = text[2:]
    return text.rstrip(".")


def as_number(text: str) -> Fraction | None:
    """The exact value of a plain number (``-12``, ``3.50``, ``1,000``, ``\\frac{3}{4}``, ``3/4``), else None."""
    text = _normalise(text)
    if not text or len(text) > _MAX_DIGITS:
        return None
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    if _NUMBER.fullmatch(text):
        return Fraction(text)
    match = _FRACTION.fullmatch(text)
    if match:
        if match.group(2) is not None:
            sign, numerator, denominator = match.group(1), int(match.group(2)), int(match.group(3))
        else:
            sign, numerator, denominator = "", int(match.group(4)), int(match.group(5))
        if denominator == 0:
            return None
        value = Fraction(numerator, denominator)
        return -value if sign == "-" else value
    return None


def quick_verdict(golds: tuple[str, ...], answer: str) -> bool | None:
    """True/False when decidable without sympy, None when math-verify must decide."""
    squeezed = "".join(answer.split())
    if any(squeezed == "".join(gold.split()) for gold in golds):
        return True
    value = as_number(answer)
    if value is None:
        return None
    gold_values = [as_number(gold) for gold in golds]
    if any(g is None for g in gold_values):
        return None
    return any(value == g for g in gold_values)
