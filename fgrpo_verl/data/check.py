"""Check verl data rows before training: required fields, and that the reward function accepts them.

verl reads ``data_source``, ``prompt`` (a chat list), ``reward_model.ground_truth`` and
``extra_info`` from every row; a row missing one fails deep inside a Ray worker hours into a
run. This module reads a sample of rows and reports each problem with file, row and field.
The reward function is called once per sampled row with a probe answer built from the row's
own ground truth, so a ground truth it cannot parse (it raises ``ValueError`` naming the
field, as ``reward_fns`` does) is reported here, before any GPU is allocated.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

REQUIRED_FIELDS = ("data_source", "prompt", "reward_model")


@dataclass
class RowCheck:
    rows_total: int = 0
    rows_checked: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def sample_indices(total: int, sample: int) -> list[int]:
    """Evenly spread row numbers (first and last included) so both ends of a file are seen."""
    if total <= sample:
        return list(range(total))
    if sample == 1:
        return [0]
    step = (total - 1) / (sample - 1)
    return sorted({round(i * step) for i in range(sample)})


def row_field_problems(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, what is wrong) for every structural problem of one verl row."""
    problems: list[tuple[str, str]] = []
    for name in REQUIRED_FIELDS:
        if row.get(name) is None:
            problems.append((name, "missing"))
    source = row.get("data_source")
    if source is not None and (not isinstance(source, str) or not source.strip()):
        problems.append(("data_source", f"must be a non-empty string, got {source!r}"))
    prompt = row.get("prompt")
    if prompt is not None:
        if not isinstance(prompt, list | tuple) or not prompt:
            problems.append(("prompt", "must be a non-empty list of chat messages {role, content}"))
        else:
            for i, message in enumerate(prompt):
                if not isinstance(message, Mapping) or not isinstance(message.get("content"), str):
                    problems.append((f"prompt[{i}].content", "must be a string"))
                elif message.get("role") not in ("system", "user", "assistant"):
                    problems.append(
                        (f"prompt[{i}].role", f"must be system/user/assistant, got {message.get('role')!r}")
                    )
    reward_model = row.get("reward_model")
    if reward_model is not None:
        if not isinstance(reward_model, Mapping):
            problems.append(("reward_model", "must be a struct with ground_truth"))
        elif reward_model.get("ground_truth") is None:
            problems.append(("reward_model.ground_truth", "missing"))
    extra = row.get("extra_info")
    if extra is not None and not isinstance(extra, Mapping):
        problems.append(("extra_info", "must be a struct (dict)"))
    return problems


def probe_answer(ground_truth: Any) -> str:
    """A response that states the row's own answer in the paper's format (used to exercise parsing)."""
    if isinstance(ground_truth, str):
        return f"Let me think step by step.\nThe final answer is \\boxed{{{ground_truth}}}."
    return "Let me think step by step."


def _score(result: Any) -> float | None:
    if isinstance(result, Mapping):
        result = result.get("score")
    try:
        value = float(result)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def read_rows(path: str, indices_for: Callable[[int], list[int]]) -> tuple[int, list[tuple[int, dict]]]:
    """(row count, [(row number, row)]) for the chosen rows of a parquet file."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    indices = indices_for(table.num_rows)
    picked = table.take(indices).to_pylist() if indices else []
    return table.num_rows, list(zip(indices, picked, strict=True))


def check_rows(
    path: str,
    reward_fn: Callable[..., Any] | None,
    reward_kwargs: Mapping[str, Any] | None = None,
    sample: int = 16,
    required_keys: tuple[str, ...] = (),
) -> RowCheck:
    """Check ``sample`` rows of ``path``; problems are ``file: row N: field: message`` strings.

    ``required_keys``: keys the reward function's result dict must carry (e.g. the ``acc`` that DAPO's
    group filter reads from ``reward_extra_info``).
    """
    result = RowCheck()
    try:
        total, rows = read_rows(path, lambda n: sample_indices(n, sample))
    except Exception as exc:  # any unreadable file is reported, whatever pyarrow raised
        result.problems.append(f"{path}: cannot be read as parquet ({type(exc).__name__}: {exc})")
        return result
    result.rows_total = total
    if total == 0:
        result.problems.append(f"{path}: has no rows")
        return result
    not_full = 0
    for number, row in rows:
        result.rows_checked += 1
        structural = row_field_problems(row)
        for name, message in structural:
            result.problems.append(f"{path}: row {number}: field {name}: {message}")
        if structural or reward_fn is None:
            continue
        ground_truth = row["reward_model"]["ground_truth"]
        try:
            outcome = reward_fn(
                data_source=row["data_source"],
                solution_str=probe_answer(ground_truth),
                ground_truth=ground_truth,
                extra_info=row.get("extra_info"),
                **dict(reward_kwargs or {}),
            )
        except Exception as exc:  # the reward function's own error names the field
            result.problems.append(
                f"{path}: row {number}: field reward_model.ground_truth (data_source={row['data_source']!r}): "
                f"the reward function rejects it: {type(exc).__name__}: {exc}"
            )
            continue
        score = _score(outcome)
        if score is None:
            result.problems.append(
                f"{path}: row {number}: the reward function returned {outcome!r}; verl needs a number or a dict "
                "with a numeric 'score'"
            )
            continue
        missing = [key for key in required_keys if not (isinstance(outcome, Mapping) and key in outcome)]
        if missing:
            result.problems.append(
                f"{path}: row {number}: the reward function's result has no {', '.join(missing)} "
                f"(algorithm.filter_groups.metric reads it from reward_extra_info); got {outcome!r}"
            )
        if row.get("ability") == "math" and isinstance(outcome, Mapping) and outcome.get("acc") is False:
            not_full += 1
    if not_full:
        result.notes.append(
            f"{path}: {not_full} of {result.rows_checked} sampled math rows are not scored correct when the answer "
            "is exactly their own ground truth; check the ground-truth format of those rows"
        )
    return result
