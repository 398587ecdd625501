"""JSONL records of the evaluation pipeline, read with errors that name the file, line and field.

Two record kinds, one JSON object per line:

* sample (written by ``generate``, read by ``score``)::

    {"problem_id": "aime24/3", "data_source": "aime24", "sample_index": 17,
     "response": "...", "ground_truth": "204", "extra_info": {...}, "finish_reason": "stop"}

* score (written by ``score``, read by ``report`` / ``compare``)::

    {"problem_id": "aime24/3", "data_source": "aime24", "sample_index": 17,
     "acc": true, "score": 1.0, "reason": null}

``(problem_id, sample_index)`` identifies a sample; a problem's samples may be spread over lines
and files in any order. Correctness for pass@k is ``acc`` (never a thresholded ``score``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


class EvalInputError(ValueError):
    """Bad evaluation input; the message names the file, the line and the field, and the fix."""


def location(path: str | os.PathLike, line: int) -> str:
    return f"{os.fspath(path)}:{line}"


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line; a bad line raises :class:`EvalInputError`."""
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"{path}: no such file")
    with path.open("r", encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise EvalInputError(
                    f"{location(path, number)}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    "fix or delete this line and rerun (work already written is kept)"
                ) from None
            if not isinstance(record, dict):
                raise EvalInputError(f"{location(path, number)}: expected a JSON object, got {type(record).__name__}")
            yield number, record


def require(record: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``record[name]`` checked against ``kind``; a missing or mistyped field raises :class:`EvalInputError`."""
    if name not in record or record[name] is None:
        raise EvalInputError(f"{where}: field {name!r} is missing")
    value = record[name]
    # bool is an int subclass: reject it where an integer is meant, and accept only it where a bool is.
    if kind is int and isinstance(value, bool):
        raise EvalInputError(f"{where}: field {name!r} must be an integer, got {value!r}")
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise EvalInputError(f"{where}: field {name!r} must be {expected}, got {type(value).__name__} {value!r:.60}")
    return value


def sample_key(record: dict[str, Any], where: str) -> tuple[str, str, int]:
    """``(data_source, problem_id, sample_index)`` of a sample or score record, validated."""
    problem_id = require(record, "problem_id", str, where)
    if not problem_id:
        raise EvalInputError(f"{where}: field 'problem_id' is empty")
    data_source = require(record, "data_source", str, where)
    index = require(record, "sample_index", int, where)
    if index < 0:
        raise EvalInputError(f"{where}: field 'sample_index' must be >= 0, got {index}")
    return data_source, problem_id, index


@dataclass
class ProblemCounts:
    """Per-problem sample and correct counts of one benchmark, with where each problem was first seen."""

    problem_ids: list[str] = field(default_factory=list)
    n: list[int] = field(default_factory=list)
    c: list[int] = field(default_factory=list)
    first_seen: list[str] = field(default_factory=list)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.n, dtype=np.int64), np.asarray(self.c, dtype=np.int64)


def load_score_counts(paths: list[str | os.PathLike]) -> dict[str, ProblemCounts]:
    """Aggregate score records into per-benchmark, per-problem counts (``acc`` decides correctness).

    Raises:
        EvalInputError: malformed line, missing/mistyped field, a sample scored twice, or a problem id
            appearing under two data sources.
    """
    index_of: dict[str, tuple[str, int]] = {}
    seen: dict[tuple[str, int], str] = {}
    tables: dict[str, ProblemCounts] = {}
    for path in paths:
        for number, record in iter_jsonl(path):
            where = location(path, number)
            data_source, problem_id, sample_index = sample_key(record, where)
            acc = require(record, "acc", bool, where)
            previous = seen.get((problem_id, sample_index))
            if previous is not None:
                raise EvalInputError(
                    f"{where}: field 'sample_index' {sample_index} of problem {problem_id!r} was already "
                    f"scored at {previous}; remove the duplicate line"
                )
            seen[(problem_id, sample_index)] = where
            table = tables.setdefault(data_source, ProblemCounts())
            slot = index_of.get(problem_id)
            if slot is None:
                index_of[problem_id] = (data_source, len(table.problem_ids))
                table.problem_ids.append(problem_id)
                table.n.append(0)
                table.c.append(0)
                table.first_seen.append(where)
                slot = index_of[problem_id]
            elif slot[0] != data_source:
                raise EvalInputError(
                    f"{where}: field 'data_source' is {data_source!r} but problem {problem_id!r} was "
                    f"{slot[0]!r} at {tables[slot[0]].first_seen[slot[1]]}"
                )
            table.n[slot[1]] += 1
            table.c[slot[1]] += int(acc)
    if not tables:
        raise EvalInputError(f"no score records in {', '.join(map(os.fspath, paths))}")
    return tables


def check_enough_samples(tables: dict[str, ProblemCounts], k: int, what: str = "k") -> None:
    """Raise naming the first problem (file, line, field) that has fewer samples than ``k``."""
    for data_source, table in tables.items():
        for problem_id, n, where in zip(table.problem_ids, table.n, table.first_seen, strict=True):
            if n < k:
                raise EvalInputError(
                    f"{where}: problem {problem_id!r} ({data_source}) has {n} scored samples (field "
                    f"'sample_index') but {what}={k} needs at least {k}; generate/score more samples or "
                    f"lower {'--m' if what == 'm' else '--max-k (or pass --ks)'}"
                )
