"""The plugin's settings, read from verl's ``algorithm.focal.*`` and validated up front.

Every error names the offending key and says how to fix it, so a bad override fails at
start-up (before any worker or GPU is touched) rather than at the first training step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fgrpo_verl.focal import BASES

ESTIMATOR_NAME = "focal_grpo"
SETTINGS_PREFIX = "algorithm.focal"
DEFAULT_GAMMA = 0.5  # the paper's gamma for F-GRPO and F-DAPO on Qwen2.5-7B

# Reward schemes: the rewards a correct and a wrong rollout receive before any shaping.
#   binary   -- 1 / 0 (math-verify style, the paper's setting)
#   signed   -- +1 / -1 (verl's math_dapo)
#   fraction -- a score in [0, 1]; only a full score (every instruction followed) is correct
REWARD_SCHEMES: dict[str, tuple[float, float]] = {
    "binary": (1.0, 0.0),
    "signed": (1.0, -1.0),
    "fraction": (1.0, 0.0),
}
# Scores are sums of float32 token rewards: allow this much rounding when comparing to the threshold.
SCORE_TOLERANCE = 1e-6


class FocalConfigError(ValueError):
    """A setting under ``algorithm.focal`` (or one it depends on) is invalid."""


@dataclass(frozen=True)
class FocalSettings:
    """Validated ``algorithm.focal.*``.

    Attributes:
        gamma: focal exponent of Eq. 12 (``algorithm.focal.gamma``).
        base: group-relative base advantage, ``grpo`` or ``rloo`` (``algorithm.focal.base``).
        rewards: reward scheme name (``algorithm.focal.rewards``).
        success_threshold: a rollout is correct iff its sequence reward >= this.
        overlong_penalty: the largest length penalty a correct answer may carry (DAPO shaping).
        metrics: raw telemetry options (``algorithm.focal.metrics``).
    """

    gamma: float = DEFAULT_GAMMA
    base: str = "grpo"
    rewards: str = "binary"
    success_threshold: float = 0.5
    overlong_penalty: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)


KNOWN_KEYS = ("gamma", "base", "rewards", "success_threshold", "overlong_penalty", "metrics")


def _key(name: str) -> str:
    return f"{SETTINGS_PREFIX}.{name}"


def _as_float(raw: Any, name: str, fix: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise FocalConfigError(f"{_key(name)}={raw!r} is not a number; {fix}") from None
    if math.isnan(value) or math.isinf(value):
        raise FocalConfigError(f"{_key(name)}={raw!r} must be finite; {fix}")
    return value


def _to_plain(node: Any) -> Any:
    """DictConfig -> dict (resolving interpolations) without importing omegaconf eagerly."""
    if node is None or isinstance(node, dict):
        return node
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(node, DictConfig):
            return OmegaConf.to_container(node, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf always ships with verl
        pass
    if isinstance(node, Mapping):
        return dict(node)
    raise FocalConfigError(f"{SETTINGS_PREFIX} must be a mapping, got {type(node).__name__}")


def overlong_penalty_from_reward_config(root: Any) -> float:
    """The largest DAPO overlong penalty configured in verl's ``reward`` section, or 0.

    verl's dapo reward manager adds ``min(-exceed / buffer_len * penalty_factor, 0)`` with
    ``exceed <= buffer_len``, so a reward is lowered by at most ``penalty_factor``.
    """
    if root is None:
        return 0.0
    try:
        reward = root.get("reward") or {}
        if (reward.get("reward_manager") or {}).get("name") != "dapo":
            return 0.0
        buffer = (reward.get("reward_kwargs") or {}).get("overlong_buffer_cfg") or {}
        if not buffer.get("enable", False):
            return 0.0
        return float(buffer.get("penalty_factor", 1.0))
    except AttributeError:
        return 0.0


def resolve_threshold(rewards: str, overlong_penalty: float) -> float:
    """Midpoint between the best wrong reward and the worst correct one (after length shaping)."""
    correct, wrong = REWARD_SCHEMES[rewards]
    if rewards == "fraction":
        # Partial scores lie anywhere below 1: only the full score counts, shaping cannot be undone.
        if overlong_penalty > 0:
            raise FocalConfigError(
                f"{_key('rewards')}=fraction cannot be combined with an overlong length penalty "
                f"({overlong_penalty}): a shortened full score is indistinguishable from a partial one. "
                "Disable reward.reward_kwargs.overlong_buffer_cfg.enable or set "
                f"{_key('success_threshold')} explicitly."
            )
        return correct
    worst_correct = correct - overlong_penalty
    if worst_correct <= wrong:
        raise FocalConfigError(
            f"{_key('rewards')}={rewards} with an overlong penalty of {overlong_penalty}: a correct answer "
            f"with the full length penalty scores {worst_correct}, no better than a wrong one ({wrong}). "
            f"Use {_key('rewards')}=signed (score rewards +1/-1 as math_dapo does), lower "
            "reward.reward_kwargs.overlong_buffer_cfg.penalty_factor, or set "
            f"{_key('success_threshold')} explicitly."
        )
    return (worst_correct + wrong) / 2.0


def parse_settings(focal_node: Any, root: Any = None) -> FocalSettings:
    """Validate ``algorithm.focal`` (a DictConfig, dict or None) into :class:`FocalSettings`.

    ``root`` is the whole verl config (to read the DAPO overlong shaping); optional.
    """
    raw = _to_plain(focal_node) or {}
    unknown = sorted(set(raw) - set(KNOWN_KEYS))
    if unknown:
        raise FocalConfigError(
            f"unknown setting {', '.join(_key(k) for k in unknown)}; "
            f"valid keys are {', '.join(_key(k) for k in KNOWN_KEYS)}"
        )
    gamma = _as_float(raw.get("gamma", DEFAULT_GAMMA), "gamma", "use a number >= 0, e.g. +algorithm.focal.gamma=0.5")
    if gamma < 0:
        raise FocalConfigError(
            f"{_key('gamma')}={gamma} is negative; the focal weight (1 - mu_hat)^gamma needs gamma >= 0 "
            "(0 = plain GRPO, the paper uses 0.5, 1 or 2)"
        )
    base = str(raw.get("base", "grpo"))
    if base not in BASES:
        raise FocalConfigError(f"{_key('base')}={base!r} is not supported; use one of {', '.join(BASES)}")
    rewards = str(raw.get("rewards", "binary"))
    if rewards not in REWARD_SCHEMES:
        raise FocalConfigError(
            f"{_key('rewards')}={rewards!r} is not supported; use one of {', '.join(REWARD_SCHEMES)}"
        )
    if raw.get("overlong_penalty") is None:
        overlong = overlong_penalty_from_reward_config(root)
    else:
        overlong = _as_float(raw["overlong_penalty"], "overlong_penalty", "use the DAPO penalty_factor, e.g. 1.0")
        if overlong < 0:
            raise FocalConfigError(f"{_key('overlong_penalty')}={overlong} must be >= 0 (it is a penalty size)")
    if raw.get("success_threshold") is None:
        threshold = resolve_threshold(rewards, overlong)
    else:
        threshold = _as_float(
            raw["success_threshold"], "success_threshold", "a rollout is correct iff its reward >= this number"
        )
    metrics = raw.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise FocalConfigError(f"{_key('metrics')} must be a mapping of telemetry options, got {metrics!r}")
    from fgrpo_verl.telemetry.options import TelemetryConfigError, parse_options

    try:
        parse_options(metrics, check_files=False)  # files are checked where the endpoint starts
    except TelemetryConfigError as exc:
        raise FocalConfigError(str(exc)) from None
    return FocalSettings(
        gamma=gamma,
        base=base,
        rewards=rewards,
        success_threshold=threshold,
        overlong_penalty=overlong,
        metrics=metrics,
    )


def settings_from_algorithm_config(algorithm: Any) -> FocalSettings:
    """Settings from verl's ``algorithm`` node (DictConfig, dict, AlgoConfig or None)."""
    if algorithm is None:
        return parse_settings(None)
    focal = algorithm.get("focal") if hasattr(algorithm, "get") else getattr(algorithm, "focal", None)
    root = None
    get_root = getattr(algorithm, "_get_root", None)
    if callable(get_root):  # a DictConfig node still attached to verl's full config
        root = get_root()
    return parse_settings(focal, root)
