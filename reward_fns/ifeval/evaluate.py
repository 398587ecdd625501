"""Strict and loose following of a response, per the IFEval reference ``evaluation_lib``.

Strict: the response passes the check (an all-whitespace response follows nothing).
Loose: any of 8 variants passes -- {as is, first line removed, last line removed, both removed} x
{as is, every ``*`` removed} -- which forgives a markdown wrapper or a leading "Sure, here it is:".
"""

from __future__ import annotations

from reward_fns.ifeval.ground_truth import Constraint
from reward_fns.ifeval.registry import run_check

MODES = ("strict", "loose")


def loose_variants(response: str) -> list[str]:
    lines = response.split("\n")
    without_first = "\n".join(lines[1:]).strip()
    without_last = "\n".join(lines[:-1]).strip()
    without_both = "\n".join(lines[1:-1]).strip()
    variants = [response, without_first, without_last, without_both]
    return variants + [v.replace("*", "") for v in variants]


def followed(response: str, constraints: tuple[Constraint, ...], mode: str) -> list[bool]:
    """One bool per constraint: is it followed by ``response`` in ``mode``."""
    candidates = [response] if mode == "strict" else loose_variants(response)
    candidates = [c for c in candidates if c.strip()]
    return [
        any(run_check(instruction_id, kwargs, candidate) for candidate in candidates)
        for instruction_id, kwargs in constraints
    ]
