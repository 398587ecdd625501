"""Read instruction-following ground truth in the formats RL data sets use.

- AllenAI (IFEvalG / RLVR-IF): ``[{'instruction_id': [...], 'kwargs': [{...}, ...]}]``, as a Python-literal or
  JSON string or as the object itself.
- Google IFEval rows: ``{"instruction_id_list": [...], "kwargs": [...]}``.
- Tulu-3 RLVR-IFeval: ``{"func_name": "validate_lowercase", "N": null, ...}`` (JSON string or dict).

The result is a tuple of ``(instruction_id, ((param, value), ...))`` -- hashable, picklable, validated.
Anything else raises :class:`~reward_fns.errors.GroundTruthError` naming the field.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from reward_fns.errors import GroundTruthError
from reward_fns.ifeval import checkers, ifevalg, tulu  # noqa: F401 - registers the instructions
from reward_fns.ifeval.registry import REGISTRY, bind

FIELD = "reward_model.ground_truth"
_MAX_CHARS = 1_000_000
Constraint = tuple[str, tuple[tuple[str, Any], ...]]


def _as_list(value: Any, field: str) -> list[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise GroundTruthError(f"{field} must be a list, got {type(value).__name__}")
    return list(value)


def _from_ids(ids: Any, kwargs: Any, field: str) -> list[Constraint]:
    if isinstance(ids, str):
        ids, kwargs = [ids], [kwargs]
    ids = _as_list(ids, f"{field}.instruction_id")
    kwargs = [None] * len(ids) if kwargs is None else _as_list(kwargs, f"{field}.kwargs")
    if len(ids) != len(kwargs):
        raise GroundTruthError(f"{field}: {len(ids)} instruction ids but {len(kwargs)} kwargs entries")
    if not ids:
        raise GroundTruthError(f"{field}: no instructions")
    return [bind(i, k, f"{field}[{n}]") for n, (i, k) in enumerate(zip(ids, kwargs, strict=True))]


def _from_mapping(entry: Mapping, field: str) -> list[Constraint]:
    if "func_name" in entry:
        args = {k: v for k, v in entry.items() if k != "func_name"}
        name = entry["func_name"]
        if not isinstance(name, str) or tulu.PREFIX + name not in REGISTRY:
            raise GroundTruthError(
                f"{field}.func_name={name!r} is not a Tulu-3 IF function; known: {sorted(tulu.TULU_FUNC_NAMES)}"
            )
        return [bind(tulu.PREFIX + name, args, field)]
    for ids_key in ("instruction_id", "instruction_id_list"):
        if ids_key in entry:
            return _from_ids(entry[ids_key], entry.get("kwargs"), field)
    raise GroundTruthError(
        f"{field} has keys {sorted(map(str, entry))}; expected 'instruction_id' + 'kwargs' (AllenAI), "
        "'instruction_id_list' + 'kwargs' (IFEval) or 'func_name' (Tulu-3)"
    )


def _decode(text: str) -> Any:
    if len(text) > _MAX_CHARS:
        raise GroundTruthError(f"{FIELD} has {len(text)} characters (limit {_MAX_CHARS})")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)  # AllenAI stores Python reprs: single quotes, None
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError) as exc:
        raise GroundTruthError(f"{FIELD} is neither JSON nor a Python literal: {text[:120]!r}") from exc


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> tuple[Constraint, ...]:
    return parse_ground_truth(_decode(text.strip()))


def parse_ground_truth(ground_truth: Any) -> tuple[Constraint, ...]:
    """Validated constraints of one row (raises :class:`GroundTruthError` for malformed ones)."""
    if isinstance(ground_truth, bytes):
        ground_truth = ground_truth.decode("utf-8", errors="strict")
    if isinstance(ground_truth, str):
        if not ground_truth.strip():
            raise GroundTruthError(f"{FIELD} is empty; an instruction-following row needs its constraints")
        return _parse_text(ground_truth)
    if isinstance(ground_truth, Mapping):
        return tuple(_from_mapping(ground_truth, FIELD))
    if ground_truth is None:
        raise GroundTruthError(f"{FIELD} is None; an instruction-following row needs its constraints")
    entries = _as_list(ground_truth, FIELD)
    if not entries:
        raise GroundTruthError(f"{FIELD} is an empty list")
    constraints: list[Constraint] = []
    for n, entry in enumerate(entries):
        if isinstance(entry, str):
            entry = _decode(entry)
        if not isinstance(entry, Mapping):
            raise GroundTruthError(f"{FIELD}[{n}] must be a dict, got {type(entry).__name__}")
        constraints.extend(_from_mapping(entry, f"{FIELD}[{n}]"))
    return tuple(constraints)
