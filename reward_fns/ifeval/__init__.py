"""Instruction-following reward: IFEval's 25 instructions, IFEvalG's 29 more, AllenAI and Tulu-3 ground truth.

``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`` -> ``{"score", "acc", "reason"}``

- ``score``: the fraction of the row's instructions followed (``score_scheme=fraction``, the default, as in
  AllenAI's RLVR); ``score_scheme=binary`` gives 1/0 (all or nothing), ``signed`` +1/-1.
- ``acc``: every instruction followed.
- ``ifeval_mode``: ``strict`` (default) or ``loose`` (IFEval's loose variants).
- Only the text after a closing ``</think>`` is judged; an unclosed ``<think>`` follows nothing.

Reasons: ``""``, ``not_followed:<ids>``, ``no_answer``, ``bad_response``, ``timeout``, ``worker_crashed``,
``pool_unavailable``, ``internal_error``. Unknown instruction ids and missing kwargs raise
:class:`~reward_fns.errors.GroundTruthError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reward_fns.bounded import DEFAULT_TIMEOUT_SECONDS, _Outcome, check_timeout, shared_pool
from reward_fns.errors import RewardSettingError
from reward_fns.ifeval.checkers import IFEVAL_IDS
from reward_fns.ifeval.evaluate import MODES, followed
from reward_fns.ifeval.ground_truth import Constraint, parse_ground_truth
from reward_fns.ifeval.registry import REGISTRY
from reward_fns.math.extract import strip_reasoning
from reward_fns.scoring import check_batch_lengths, check_scheme, make_result, warn_unknown_kwargs

__all__ = ["IFEVAL_IDS", "REGISTRY", "compute_score", "compute_score_batch", "parse_ground_truth"]

# Longer responses are checked in the bounded pool: a few reference regexes are quadratic on adversarial
# text (many blank lines), and punkt/langdetect grow with length.
IN_PROCESS_MAX_CHARS = 10_000
_MAX_REASON_IDS = 3


def _settings(kwargs: dict[str, Any]) -> tuple[str, str, float]:
    warn_unknown_kwargs(kwargs)
    scheme = check_scheme(kwargs.get("score_scheme"), "fraction")
    mode = kwargs.get("ifeval_mode", "strict")
    if mode not in MODES:
        raise RewardSettingError(f"reward kwarg ifeval_mode={mode!r} must be one of {MODES}")
    return scheme, mode, check_timeout(kwargs.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS))


def _response_text(solution_str: Any) -> tuple[str | None, str]:
    if isinstance(solution_str, bytes):
        solution_str = solution_str.decode("utf-8", errors="replace")
    if not isinstance(solution_str, str):
        return None, "bad_response"
    text = strip_reasoning(solution_str)
    if text is None or not text.strip():
        return None, "no_answer"
    return text, ""


def check_response(response: str, constraints: tuple[Constraint, ...], mode: str) -> list[bool]:
    """Pool entry point (module-level, picklable)."""
    return followed(response, constraints, mode)


def _result(flags: list[bool], constraints: tuple[Constraint, ...], scheme: str) -> dict[str, Any]:
    missed = [cid for (cid, _), ok in zip(constraints, flags, strict=True) if not ok]
    reason = "not_followed:" + ",".join(missed[:_MAX_REASON_IDS]) + ("..." if len(missed) > _MAX_REASON_IDS else "")
    return make_result(not missed, scheme, reason, fraction=sum(flags) / len(flags))


def compute_score(
    data_source: str, solution_str: Any, ground_truth: Any, extra_info: dict | None = None, **kwargs: Any
) -> dict[str, Any]:
    """Score one response (verl's ``compute_score`` signature). Never raises for a bad response."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Score many responses; long ones are checked in parallel in the bounded pool."""
    scheme, mode, timeout = _settings(kwargs)
    check_batch_lengths(data_sources, solution_strs, ground_truths)
    all_constraints = [parse_ground_truth(gt) for gt in ground_truths]  # data bugs raise first
    results: list[dict[str, Any] | None] = [None] * len(solution_strs)
    pooled: list[tuple[int, tuple]] = []
    for index, (constraints, response) in enumerate(zip(all_constraints, solution_strs, strict=True)):
        text, reason = _response_text(response)
        if text is None:
            results[index] = make_result(False, scheme, reason, fraction=0.0)
        elif len(text) > IN_PROCESS_MAX_CHARS:
            pooled.append((index, (text, constraints, mode)))
        else:
            try:
                results[index] = _result(followed(text, constraints, mode), constraints, scheme)
            except Exception:  # a checker bug must not stop a run
                results[index] = make_result(False, scheme, "internal_error", fraction=0.0)
    if pooled:
        outcomes = shared_pool().run_many(check_response, [args for _, args in pooled], timeout)
        for (index, args), outcome in zip(pooled, outcomes, strict=True):
            if isinstance(outcome, _Outcome):
                results[index] = make_result(False, scheme, outcome.reason, fraction=0.0)
            else:
                results[index] = _result(outcome, args[1], scheme)
    return results  # type: ignore[return-value]
