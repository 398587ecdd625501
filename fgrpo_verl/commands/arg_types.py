"""argparse ``type=`` validators shared by the sub-commands: bad values exit 2 naming the flag."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def focal_gamma(text: str) -> float:
    """The focal exponent of paper Eq. 12: finite and >= 0."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (0 = plain GRPO), got {text}")
    return value


def int_at_least(minimum: int, why: str = "") -> Callable[[str], int]:
    """An integer flag with a lower bound; ``why`` is appended to the error."""
    suffix = f" ({why})" if why else ""

    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}{suffix}, got {text}")
        return value

    return parse
