"""Math answer reward: extraction (in process), exact numbers (in process), math-verify (bounded pool).

``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`` -> ``{"score", "acc", "reason"}``

Keyword settings (``reward.custom_reward_function.reward_kwargs.*``):
- ``score_scheme``: ``binary`` (default, 1/0), ``signed`` (+1/-1 like verl's math_dapo); ``fraction`` = binary.
- ``timeout_seconds``: hard bound on the math-verify work of one response (default 5).

Reasons: ``""`` (correct), ``no_answer``, ``mismatch``, ``parse_error``, ``timeout``, ``worker_crashed``,
``pool_unavailable``, ``internal_error``, ``bad_response`` (not a string).
"""

from __future__ import annotations

import math
import numbers
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from reward_fns.bounded import DEFAULT_TIMEOUT_SECONDS, _Outcome, check_timeout, shared_pool
from reward_fns.errors import GroundTruthError
from reward_fns.math.extract import extract_answer
from reward_fns.math.fast_compare import quick_verdict
from reward_fns.scoring import check_batch_lengths, check_scheme, make_result, warn_unknown_kwargs

__all__ = ["clear_verdict_cache", "compute_score", "compute_score_batch", "extract_answer", "gold_answers"]

_MAX_GOLD_CHARS = 10_000
# GRPO samples many responses per prompt and they often end in the same answer string: remember the
# math-verify verdict of each (gold, answer) pair. Timeouts and crashes are not remembered.
_VERDICT_CACHE_SIZE = 65_536
_verdicts: OrderedDict[tuple[tuple[str, ...], str], tuple[bool, str]] = OrderedDict()
_verdicts_lock = threading.Lock()


def clear_verdict_cache() -> None:
    """Forget remembered math-verify verdicts (benchmarks measure cold work with it)."""
    with _verdicts_lock:
        _verdicts.clear()


def _cached_verdict(key: tuple[tuple[str, ...], str]) -> tuple[bool, str] | None:
    with _verdicts_lock:
        verdict = _verdicts.get(key)
        if verdict is not None:
            _verdicts.move_to_end(key)
        return verdict


def _remember(key: tuple[tuple[str, ...], str], verdict: tuple[bool, str]) -> None:
    with _verdicts_lock:
        _verdicts[key] = verdict
        if len(_verdicts) > _VERDICT_CACHE_SIZE:
            _verdicts.popitem(last=False)


def _gold_text(value: Any, field: str) -> str:
    if isinstance(value, bool):
        raise GroundTruthError(f"{field} is a bool ({value!r}); a math ground truth is a string or a number")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        if not math.isfinite(float(value)):
            raise GroundTruthError(f"{field} is {value!r}; a math ground truth must be finite")
        return repr(float(value))
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="strict")
    if not isinstance(value, str):
        raise GroundTruthError(
            f"{field} has type {type(value).__name__}; a math ground truth is a string, a number, "
            "or a list of acceptable answers"
        )
    text = value.strip()
    if not text:
        raise GroundTruthError(f"{field} is empty; fix the data row's reward_model.ground_truth")
    if len(text) > _MAX_GOLD_CHARS:
        raise GroundTruthError(f"{field} has {len(text)} characters; a math answer is at most {_MAX_GOLD_CHARS}")
    return text


def gold_answers(ground_truth: Any) -> tuple[str, ...]:
    """Validate ``reward_model.ground_truth``: a string, a number, or a non-empty list of them (any may match).

    Raises :class:`GroundTruthError` naming the field for anything else, so a broken data set fails on
    its first row instead of scoring 0 for a whole run.
    """
    field = "reward_model.ground_truth"
    if isinstance(ground_truth, (str, bytes, numbers.Number)):
        text = _gold_text(ground_truth, field)
        # A boxed gold (some data sets store the solution's box): keep its content.
        boxed = extract_answer(text) if "\\boxed" in text or "\\fbox" in text else None
        return (boxed or text,)
    if isinstance(ground_truth, Sequence) or type(ground_truth).__name__ == "ndarray":
        items = list(ground_truth)
        if not items:
            raise GroundTruthError(f"{field} is an empty list; give at least one acceptable answer")
        return tuple(_gold_text(item, f"{field}[{i}]") for i, item in enumerate(items))
    if ground_truth is None:
        raise GroundTruthError(f"{field} is None; every math row needs its answer")
    raise GroundTruthError(f"{field} has type {type(ground_truth).__name__}; expected a string, number or list")


def _prepare(solution_str: Any) -> tuple[str | None, str]:
    """(answer, reason): the extracted answer, or None with the reason there is none."""
    if isinstance(solution_str, bytes):
        solution_str = solution_str.decode("utf-8", errors="replace")
    if not isinstance(solution_str, str):
        return None, "bad_response"
    try:
        answer = extract_answer(solution_str)
    except Exception:  # extraction is regex and slicing; never let a surprise stop a run
        return None, "internal_error"
    return answer, "" if answer is not None else "no_answer"


def _finish(verdict: Any, scheme: str) -> dict[str, Any]:
    if isinstance(verdict, _Outcome):
        return make_result(False, scheme, verdict.reason)
    correct, reason = verdict
    return make_result(bool(correct), scheme, reason)


def _settings(kwargs: dict[str, Any]) -> tuple[str, float]:
    warn_unknown_kwargs(kwargs)
    scheme = check_scheme(kwargs.get("score_scheme"), "binary")
    if scheme == "fraction":
        scheme = "binary"  # one answer: the fraction of it that is right is 0 or 1
    return scheme, check_timeout(kwargs.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS))


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
    """Score many responses; the math-verify work runs in parallel on the pool's workers (all cores)."""
    scheme, timeout = _settings(kwargs)
    check_batch_lengths(data_sources, solution_strs, ground_truths)
    golds = [gold_answers(gt) for gt in ground_truths]  # data bugs raise before any work
    results: list[dict[str, Any] | None] = [None] * len(solution_strs)
    pending: list[tuple[int, tuple[tuple[str, ...], str]]] = []
    for index, (gold, response) in enumerate(zip(golds, solution_strs, strict=True)):
        answer, reason = _prepare(response)
        if answer is None:
            results[index] = make_result(False, scheme, reason)
            continue
        try:
            verdict = quick_verdict(gold, answer)
        except Exception:  # never let the shortcut stop a run: math-verify decides instead
            verdict = None
        cached = _cached_verdict((gold, answer)) if verdict is None and len(answer) < 1000 else None
        if verdict is not None:
            results[index] = make_result(verdict, scheme, "mismatch")
        elif cached is not None:
            results[index] = _finish(cached, scheme)
        else:
            pending.append((index, (gold, answer)))
    if pending:
        from reward_fns.math.worker_entry import verify_answer_entry

        unique = list(dict.fromkeys(key for _, key in pending))  # identical (gold, answer) pairs: verify once
        verdicts = dict(zip(unique, shared_pool().run_many(verify_answer_entry, unique, timeout), strict=True))
        for key, verdict in verdicts.items():
            if not isinstance(verdict, _Outcome) and len(key[1]) < 1000:
                _remember(key, verdict)
        for index, key in pending:
            results[index] = _finish(verdicts[key], scheme)
    return results  # type: ignore[return-value]
