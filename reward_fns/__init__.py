"""Rule-based reward functions for verl: math answers and instruction following.

Point verl at the dispatcher::

    reward.custom_reward_function.path=pkg://reward_fns
    reward.custom_reward_function.name=compute_score

``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`` picks the scorer
from ``data_source`` (see :data:`MATH_SOURCES`, :data:`MATH_SOURCE_PREFIXES`, ...) and returns
``{"score": float, "acc": bool, "reason": str}`` (``reason`` is ``""`` at full score). An unknown
source or a malformed ground truth raises a :class:`~reward_fns.errors.RewardInputError` (a
``ValueError``) naming the field; a bad *response* never raises.

Validate a data row without a response: ``compute_score(data_source, "", ground_truth, extra_info)``
raises for a malformed ground truth and returns a dict otherwise.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from reward_fns.errors import GroundTruthError, RewardInputError, RewardSettingError, UnknownDataSourceError
from reward_fns.scoring import check_batch_lengths

__all__ = [
    "IF_SOURCES",
    "IF_SOURCE_PREFIXES",
    "MATH_SOURCES",
    "MATH_SOURCE_PREFIXES",
    "GroundTruthError",
    "RewardInputError",
    "RewardSettingError",
    "UnknownDataSourceError",
    "compute_score",
    "compute_score_batch",
    "scorer_module",
]

# Compared case-insensitively. Exact names first, then prefixes (aime2024, aime25, amc23, ...).
MATH_SOURCES = frozenset(
    {
        "math",
        "math_dapo",
        "math500",
        "math-500",
        "hendrycks_math",
        "lighteval/math",
        "digitallearninggmbh/math-lighteval",
        "huggingfaceh4/math-500",
        "deepscaler",
        "agentica-org/deepscaler-preview-dataset",
        "bytedtsinghua-sia/dapo-math-17k",
        "open-r1/dapo-math-17k-processed",
        "olympiadbench",
        "minerva_math",
    }
)
MATH_SOURCE_PREFIXES = ("aime", "amc", "math_dapo", "dapo-math", "deepscaler")
IF_SOURCES = frozenset(
    {
        "ifeval",
        "google/ifeval",
        "allenai/rlvr-ifeval",
        "allenai/ifeval",
        "ifeval_rlvr",
        "ifevalg",
        "allenai/dolci-rl-zero-if-7b",
        "allenai/tulu-3-sft-personas-instruction-following",
    }
)
IF_SOURCE_PREFIXES = ("ifeval", "allenai/rlvr-ifeval", "allenai/ifeval")


def scorer_module(data_source: Any) -> str:
    """Name of the module that scores ``data_source`` (``reward_fns.math`` or ``reward_fns.ifeval``)."""
    if not isinstance(data_source, str) or not data_source.strip():
        raise UnknownDataSourceError(f"data_source must be a non-empty string, got {data_source!r}")
    key = data_source.strip().lower()
    if key in MATH_SOURCES or key.startswith(MATH_SOURCE_PREFIXES):
        return "reward_fns.math"
    if key in IF_SOURCES or key.startswith(IF_SOURCE_PREFIXES):
        return "reward_fns.ifeval"
    raise UnknownDataSourceError(
        f"data_source={data_source!r} has no reward function. Known math sources: {sorted(MATH_SOURCES)} "
        f"and any starting with {list(MATH_SOURCE_PREFIXES)}; instruction-following sources: "
        f"{sorted(IF_SOURCES)} and any starting with {list(IF_SOURCE_PREFIXES)}. Rename the data_source "
        "of the data rows, or point reward.custom_reward_function at reward_fns.math / reward_fns.ifeval directly."
    )


def _scorer(data_source: Any, name: str) -> Callable[..., Any]:
    return getattr(importlib.import_module(scorer_module(data_source)), name)


def compute_score(
    data_source: str, solution_str: Any, ground_truth: Any, extra_info: dict | None = None, **kwargs: Any
) -> dict[str, Any]:
    """Score one response with the scorer for ``data_source`` (verl's ``compute_score`` signature)."""
    return _scorer(data_source, "compute_score")(data_source, solution_str, ground_truth, extra_info, **kwargs)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Score many responses, mixed sources allowed; each scorer's batch runs in parallel on all cores."""
    check_batch_lengths(data_sources, solution_strs, ground_truths)
    infos = list(extra_infos) if extra_infos is not None else [None] * len(data_sources)
    groups: dict[str, list[int]] = {}
    for index, source in enumerate(data_sources):
        groups.setdefault(scorer_module(source), []).append(index)
    results: list[dict[str, Any] | None] = [None] * len(data_sources)
    for module_name, indices in groups.items():
        batch_fn = importlib.import_module(module_name).compute_score_batch
        scored = batch_fn(
            [data_sources[i] for i in indices],
            [solution_strs[i] for i in indices],
            [ground_truths[i] for i in indices],
            [infos[i] for i in indices],
            **kwargs,
        )
        for index, result in zip(indices, scored, strict=True):
            results[index] = result
    return results  # type: ignore[return-value]
