"""Score schemes and the result dict every reward function returns.

Schemes (keyword ``score_scheme``, set with ``+reward.custom_reward_function.reward_kwargs.score_scheme=...``):

- ``binary``: 1.0 when correct, 0.0 otherwise (math default).
- ``signed``: +1.0 / -1.0, like verl's ``math_dapo``.
- ``fraction``: instruction following only: the fraction of instructions followed (instruction-following
  default); for math, where there is one answer, it equals ``binary``.

``acc`` is always "the rollout is fully correct", whatever the scheme, so the focal estimator's
``algorithm.focal.rewards=binary|signed|fraction`` can recover success from the scalar score.
"""

from __future__ import annotations

import logging
from typing import Any

from reward_fns.errors import RewardSettingError

SCORE_SCHEMES = ("binary", "signed", "fraction")

# Keyword arguments any entry point accepts; verl's reward loop may add its own (ignored).
KNOWN_KWARGS = frozenset(
    {"score_scheme", "timeout_seconds", "ifeval_mode", "reward_router_address", "reward_model_tokenizer"}
)

_logger = logging.getLogger(__name__)
_warned_kwargs: set[str] = set()


def check_scheme(score_scheme: str | None, default: str) -> str:
    scheme = default if score_scheme is None else score_scheme
    if scheme not in SCORE_SCHEMES:
        raise RewardSettingError(
            f"reward kwarg score_scheme={score_scheme!r} is not one of {SCORE_SCHEMES}; "
            "fix reward.custom_reward_function.reward_kwargs.score_scheme"
        )
    return scheme


def warn_unknown_kwargs(kwargs: dict[str, Any]) -> None:
    """Warn once per unknown keyword: a typo in reward_kwargs must not pass unnoticed."""
    for key in kwargs:
        if key not in KNOWN_KWARGS and key not in _warned_kwargs:
            _warned_kwargs.add(key)
            _logger.warning("reward_fns: ignoring unknown reward kwarg %r (known: %s)", key, sorted(KNOWN_KWARGS))


def make_result(correct: bool, scheme: str, reason: str | None = None, fraction: float | None = None) -> dict[str, Any]:
    """Build ``{"score", "acc", ["reason"], ...}``; ``fraction`` is the partial credit (instruction following)."""
    if scheme == "signed":
        score = 1.0 if correct else -1.0
    elif scheme == "fraction" and fraction is not None:
        score = float(fraction)
    else:
        score = 1.0 if correct else 0.0
    # Always the same three keys: verl's reward loop takes the key set of the FIRST result of a batch
    # and indexes every other result with it (a missing key is a KeyError that stops the run).
    return {"score": score, "acc": bool(correct), "reason": "" if correct else (reason or "mismatch")}


def check_batch_lengths(data_sources: Any, solution_strs: Any, ground_truths: Any) -> None:
    """The batch entry points take parallel sequences: a length mismatch is a caller bug."""
    if not (len(data_sources) == len(solution_strs) == len(ground_truths)):
        raise ValueError(
            f"data_sources, solution_strs and ground_truths must have the same length, got "
            f"{len(data_sources)}, {len(solution_strs)} and {len(ground_truths)}"
        )
