"""Instruction registry: id -> checker function + the typed parameters it requires.

Every parameter is required and validated when a ground truth is read (never the reference's random
default for a missing one); :func:`bind` turns raw kwargs into clean ones or raises
:class:`~reward_fns.errors.GroundTruthError` naming the field.
"""

from __future__ import annotations

import ast
import math
import numbers
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from reward_fns.errors import GroundTruthError

RELATIONS = ("less than", "at least")
QUANTIFIERS = ("at least", "at most", "around")  # Tulu-3 RLVR-IFeval


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # int | str | str_list | relation | quantifier | letter | char | language | options | ...


@dataclass(frozen=True)
class Instruction:
    id: str
    check: Callable[..., bool]
    params: tuple[Param, ...]


REGISTRY: dict[str, Instruction] = {}


def register(instruction_id: str, **params: str) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    def wrap(fn: Callable[..., bool]) -> Callable[..., bool]:
        if instruction_id in REGISTRY:
            raise ValueError(f"instruction id {instruction_id!r} registered twice")
        REGISTRY[instruction_id] = Instruction(instruction_id, fn, tuple(Param(n, k) for n, k in params.items()))
        return fn

    return wrap


@lru_cache(maxsize=1)
def langdetect_languages() -> frozenset[str]:
    from langdetect.detector_factory import PROFILES_DIRECTORY

    return frozenset(os.listdir(PROFILES_DIRECTORY))


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _coerce(param: Param, value: Any, field: str) -> Any:
    kind = param.kind
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or float(value) != int(value):
            raise GroundTruthError(f"{field}={value!r} must be a whole number")
        number = int(value)
        if number < 0:
            raise GroundTruthError(f"{field}={value!r} must not be negative")
        return number
    if kind == "word_or_list":  # IFEvalG stores some words as a one-element list
        if not isinstance(value, str) and hasattr(value, "__iter__"):
            items = list(value)
            value = items[0] if items else None
        kind = "str"
    if kind == "options":
        if isinstance(value, str):
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                value = [value]
        kind = "str_list"
    if kind in ("str", "relation", "quantifier", "letter", "char", "language"):
        if not isinstance(value, str) or not value.strip():
            raise GroundTruthError(f"{field}={value!r} must be a non-empty string")
        if kind == "relation" and value not in RELATIONS:
            raise GroundTruthError(f"{field}={value!r} must be one of {RELATIONS}")
        if kind == "quantifier" and value not in QUANTIFIERS:
            raise GroundTruthError(f"{field}={value!r} must be one of {QUANTIFIERS}")
        if kind == "char" and len(value) != 1:
            raise GroundTruthError(f"{field}={value!r} must be a single character")
        if kind == "letter":
            letter = value.strip().lower()
            if len(letter) != 1 or not ("a" <= letter <= "z"):
                raise GroundTruthError(f"{field}={value!r} must be a single ASCII letter")
            return letter
        if kind == "language" and value not in langdetect_languages():
            raise GroundTruthError(f"{field}={value!r} is not a langdetect language code (e.g. en, de, zh-cn)")
        return value
    if kind == "str_list":
        if isinstance(value, str) or not hasattr(value, "__iter__"):
            raise GroundTruthError(f"{field}={value!r} must be a list of strings")
        items = list(value)
        if not items or not all(isinstance(item, str) and item.strip() for item in items):
            raise GroundTruthError(f"{field}={value!r} must be a non-empty list of non-empty strings")
        return tuple(items)
    raise AssertionError(f"unknown parameter kind {kind}")


def bind(instruction_id: Any, kwargs: Any, field: str) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """Validate one instruction of a ground truth; returns ``(id, sorted (name, value) pairs)``."""
    if not isinstance(instruction_id, str) or instruction_id not in REGISTRY:
        raise GroundTruthError(f"{field}: unknown instruction id {instruction_id!r}; supported ids: {sorted(REGISTRY)}")
    spec = REGISTRY[instruction_id]
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, Mapping):
        raise GroundTruthError(f"{field}.kwargs must be a dict, got {type(kwargs).__name__}")
    names = {p.name for p in spec.params}
    # Data sets stored as one struct column carry every instruction's keys, unused ones null: ignore
    # those; a non-null key the instruction does not take is a data bug.
    extra = sorted(k for k, v in kwargs.items() if k not in names and not _is_missing(v))
    if extra:
        raise GroundTruthError(
            f"{field}.kwargs has {extra} that {instruction_id} does not take (it takes {sorted(names)})"
        )
    bound = []
    for param in spec.params:
        value = kwargs.get(param.name)
        if param.kind == "ignored":  # accepted in the data, unused by the check (e.g. exclude_word_harder)
            continue
        if _is_missing(value):
            raise GroundTruthError(f"{field}.kwargs.{param.name} is missing; {instruction_id} requires it")
        bound.append((param.name, _coerce(param, value, f"{field}.kwargs.{param.name}")))
    return instruction_id, tuple(bound)


def run_check(instruction_id: str, kwargs: tuple[tuple[str, Any], ...], response: str) -> bool:
    return bool(REGISTRY[instruction_id].check(response, **dict(kwargs)))
