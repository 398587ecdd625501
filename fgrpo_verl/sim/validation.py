"""Argument checks shared by the simulation and the tail-miss calculator.

Every failure is a ``ValueError`` naming the argument, the value received and the valid range,
so a command line or notebook caller knows exactly what to change.
"""

from __future__ import annotations

import math
from numbers import Integral, Real


def require_number(name: str, value: object) -> float:
    """A finite real number (bools excluded)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def require_int(name: str, value: object, minimum: int) -> int:
    """An integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def require_gamma(value: object, name: str = "gamma") -> float:
    """A focal exponent: finite and >= 0 (gamma = 0 is plain GRPO)."""
    gamma = require_number(name, value)
    if gamma < 0.0:
        raise ValueError(f"{name} must be >= 0 (0 = plain GRPO, the paper uses 0.5 to 2), got {value!r}")
    return gamma


def require_positive(name: str, value: object) -> float:
    x = require_number(name, value)
    if x <= 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return x
