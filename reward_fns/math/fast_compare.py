"""Exact in-process comparison for plain numbers, so the common case never pays a process round trip.

Most math RL answers are numbers. When both the gold and the extracted answer read as a number -- an
integer, decimal, ``a/b`` or ``\\frac{a}{b}``, ``m\\times10^{e}``, optionally written ``x = ...``, with a
trailing degree sign, ``\\%`` or a ``\\text{unit}`` -- they are compared exactly with :class:`fractions.Fraction`
(a percentage also matches its ratio, as in math-verify). Anything else returns ``None`` and goes to
math-verify in the bounded pool. The accepted forms are the ones math-verify also equates; the tests
check the two agree on them.
"""

from __future__ import annotations

import re
from fractions import Fraction

_PLAIN = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")
_FRACTION = re.compile(r"([-+]?)\\[dt]?frac\{([-+]?\d+)\}\{([-+]?\d+)\}|([-+]?\d+)/(\d+)")
_SCIENTIFIC = re.compile(r"([-+]?(?:\d+(?:\.\d*)?|\.\d+))(?:\\times|\\cdot)10\^(?:\{([-+]?\d{1,3})\}|(\d))")
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_VARIABLE = re.compile(r"^[a-zA-Z]=")
_UNIT = re.compile(r"\\(?:text|mbox|mathrm)\{[a-zA-Z ]*\}$")
_DEGREES = ("^\\circ", "^{\\circ}", "°")
_MAX_CHARS = 200  # longer "numbers" go to the pool (and its time bound)


def _normalise(text: str) -> str:
    text = text.strip().replace("{,}", ",").replace("\\!", "").replace("\\,", "").replace("\\ ", "")
    text = text.replace(" ", "").replace("\\left", "").replace("\\right", "")
    if text.startswith("\\$"):
        text = text[2:]
    return text.rstrip(".")


def _value(text: str) -> Fraction | None:
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    if _PLAIN.fullmatch(text):
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
    match = _SCIENTIFIC.fullmatch(text)
    if match:
        exponent = int(match.group(2) if match.group(2) is not None else match.group(3))
        return Fraction(match.group(1)) * Fraction(10) ** exponent
    return None


def as_number(text: str) -> tuple[Fraction, bool] | None:
    """``(value, is_percentage)`` of a number written in one of the plain forms above, else None."""
    text = _normalise(text)
    if not text or len(text) > _MAX_CHARS:
        return None
    text = _VARIABLE.sub("", text)
    text = _UNIT.sub("", text)
    for degree in _DEGREES:
        text = text.removesuffix(degree)
    percent = text.endswith("%")
    if percent:
        text = text.removesuffix("%").removesuffix("\\")
    value = _value(text)
    return None if value is None else (value, percent)


def _equal(answer: tuple[Fraction, bool], gold: tuple[Fraction, bool]) -> bool:
    (a, a_pct), (g, g_pct) = answer, gold
    return a == g or (a_pct and a / 100 == g) or (g_pct and g / 100 == a)


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
    return any(_equal(value, g) for g in gold_values)  # type: ignore[arg-type]
