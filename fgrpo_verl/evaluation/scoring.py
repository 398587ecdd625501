"""Stage (b): score generated samples on CPU, in parallel, resumably.

Every sample line of the input is scored with a verl-style ``compute_score(data_source,
solution_str, ground_truth, extra_info)`` (default ``reward_fns:compute_score``) and one score
line is appended to the output. Correctness is the result's ``acc``.

Two ways to run the scorer (``mode``):
* ``batch`` (chosen automatically when the scorer's module has ``compute_score_batch``, as
  ``reward_fns`` does): the scorer's own batch API is called in this process on chunks of samples;
  it parallelises and time-bounds the expensive checks itself (reward_fns: a warm pebble pool with
  a per-call bound), so no second layer of processes is stacked on top of its pool.
* ``pool``: any plain ``compute_score`` (e.g. verl's ``default_compute_score``) runs in a pebble
  process pool built here, with the per-sample bound below.

Safety:
* In ``pool`` mode workers are processes (pebble), so a scorer that hangs is killed at ``timeout``
  seconds and the sample recorded as wrong with ``reason: "timeout"``; a dead worker is recorded
  as ``reason: "scorer_process_died"``. Samples are sent in small batches; a batch that times out
  is re-run one sample at a time so only the slow sample is affected. A scorer with its own pool
  (reward_fns) cannot run inside these workers and is refused in ``pool`` mode.
* Results are appended and flushed (fsync) batch by batch, in input order. A rerun skips every
  sample already in the output, so an interrupted run resumes where it stopped; a torn last line
  (crash during a write) is cut off and rescored.
* A malformed input line, a missing field, or a scorer ``ValueError`` (malformed ground truth)
  stops the run with an error naming the file, line and field -- after writing every result
  obtained so far.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import logging
import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fgrpo_verl.evaluation.records import EvalInputError, iter_jsonl, location, require, sample_key

logger = logging.getLogger(__name__)

DEFAULT_SCORER = "reward_fns:compute_score"


class ScorerError(RuntimeError):
    """The scoring function could not be loaded or returned something unusable."""


def load_scorer(spec: str) -> Callable[..., Any]:
    """``module:function`` or ``path/to/file.py:function`` (like verl's custom_reward_function.path/name)."""
    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise ScorerError(f"--scorer {spec!r} must look like 'module:function' or 'file.py:function'")
    try:
        if target.endswith(".py"):
            module_spec = importlib.util.spec_from_file_location(Path(target).stem, target)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"cannot load {target}")
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except Exception as exc:
        raise ScorerError(f"--scorer {spec!r}: cannot import {target!r} ({type(exc).__name__}: {exc})") from exc
    function = getattr(module, name, None)
    if not callable(function):
        raise ScorerError(f"--scorer {spec!r}: {target!r} has no callable {name!r}")
    return function


_worker_scorers: dict[str, Callable[..., Any]] = {}


def _score_batch(spec: str, items: list[tuple[str, str, Any, Any]], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """Worker body: ``[("ok", result) | ("value_error", message) | ("error", message)]`` per item."""
    scorer = _worker_scorers.get(spec)
    if scorer is None:
        scorer = _worker_scorers[spec] = load_scorer(spec)
    return _score_batch_in_process(scorer, items, kwargs)


def _normalise(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict) or "acc" not in result:
        return {"_bad_result": f"the scorer returned {type(result).__name__} {result!r:.80} without an 'acc' key"}
    return {
        "acc": bool(result["acc"]),
        "score": float(result.get("score", float(bool(result["acc"])))),
        "reason": result.get("reason"),
    }


def batch_function(spec: str) -> Callable[..., Any] | None:
    """The scorer module's ``compute_score_batch`` if it has one (module specs only)."""
    target = spec.rpartition(":")[0]
    if target.endswith(".py"):
        return None
    function = getattr(importlib.import_module(target), "compute_score_batch", None)
    return function if callable(function) else None


def _score_with_batch_api(
    batch_fn: Callable[..., Any],
    single_fn: Callable[..., Any],
    items: list[tuple[str, str, Any, Any]],
    kwargs: dict[str, Any],
) -> list[tuple[str, Any]]:
    """One call for the chunk; if the scorer rejects it, score one by one to name the bad sample."""
    columns = [list(column) for column in zip(*items, strict=True)]
    try:
        return [("ok", _normalise(result)) for result in batch_fn(*columns, **kwargs)]
    except Exception:  # rejected (ValueError) or broken: find the sample at fault one by one
        pass
    return [_score_batch_in_process(single_fn, [item], kwargs)[0] for item in items]


def _score_batch_in_process(
    scorer: Callable[..., Any], items: list[tuple[str, str, Any, Any]], kwargs: dict[str, Any]
) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for data_source, response, ground_truth, extra_info in items:
        try:
            out.append(("ok", _normalise(scorer(data_source, response, ground_truth, extra_info, **kwargs))))
        except ValueError as exc:
            out.append(("value_error", str(exc)))
        except Exception as exc:
            out.append(("error", f"{type(exc).__name__}: {exc}"))
    return out


@dataclass
class ScoreSummary:
    scored: int = 0
    skipped: int = 0
    correct: int = 0
    reasons: Counter = field(default_factory=Counter)

    def describe(self) -> str:
        reasons = ", ".join(f"{k}: {v}" for k, v in self.reasons.most_common()) or "none"
        return (
            f"scored {self.scored} samples ({self.correct} correct), skipped {self.skipped} already scored; "
            f"reasons: {reasons}"
        )


def _repair_and_load_done(scores_path: Path) -> set[tuple[str, int]]:
    """Keys already scored; cut off a torn last line left by a crash during a write."""
    done: set[tuple[str, int]] = set()
    if not scores_path.exists():
        return done
    raw = scores_path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        cut = raw.rfind(b"\n") + 1
        logger.warning("%s: dropping an incomplete last line (interrupted write); it will be rescored", scores_path)
        with scores_path.open("r+b") as handle:
            handle.truncate(cut)
    for number, record in iter_jsonl(scores_path):
        _, problem_id, index = sample_key(record, location(scores_path, number))
        done.add((problem_id, index))
    return done


@dataclass
class _Pending:
    where: str
    key: tuple[str, str, int]
    item: tuple[str, str, Any, Any]


def score_file(
    samples_path: str | os.PathLike,
    scores_path: str | os.PathLike,
    scorer: str = DEFAULT_SCORER,
    workers: int | None = None,
    timeout: float = 30.0,
    batch_size: int = 16,
    mode: str = "auto",
    scorer_kwargs: dict[str, Any] | None = None,
) -> ScoreSummary:
    """Score every not-yet-scored sample of ``samples_path`` into ``scores_path`` (appending).

    ``scorer_kwargs`` are passed to every scorer call (like verl's ``custom_reward_function.reward_kwargs``);
    ``timeout`` bounds each sample in ``pool`` mode (a batch-API scorer applies its own bound).

    Raises:
        EvalInputError: malformed input (file, line, field named); results before it are kept.
        ScorerError: the scorer cannot be imported or returns no ``acc``.
    """
    from pebble import ProcessPool

    single_fn = load_scorer(scorer)  # fail fast, in this process, on a bad --scorer
    if mode not in {"auto", "batch", "pool"}:
        raise ScorerError(f"--mode must be auto, batch or pool, got {mode!r}")
    batch_fn = batch_function(scorer)
    if mode == "batch" and batch_fn is None:
        raise ScorerError(f"--mode batch: the module of --scorer {scorer!r} has no compute_score_batch")
    if mode == "pool" and batch_fn is not None:
        # Such scorers (reward_fns) run their own process pool, which cannot start inside a pool worker.
        raise ScorerError(
            f"--mode pool: the module of --scorer {scorer!r} has compute_score_batch and manages its own "
            "worker processes; use --mode batch (the default picks it)"
        )
    samples_path, scores_path = Path(samples_path), Path(scores_path)
    scores_path.parent.mkdir(parents=True, exist_ok=True)
    done = _repair_and_load_done(scores_path)
    summary = ScoreSummary()
    workers = workers or max(1, (os.cpu_count() or 2) - 1)
    window = max(1, workers) * 4  # batches in flight

    kwargs = dict(scorer_kwargs or {})
    if batch_fn is not None:
        window, batch_size = 1, max(batch_size, 256)  # the scorer parallelises a chunk itself
    pool_context = contextlib.nullcontext() if batch_fn is not None else ProcessPool(max_workers=workers)
    with pool_context as pool, scores_path.open("a", encoding="utf-8") as out:

        def results_of(batches: list[list[_Pending]]) -> list[list[tuple[str, Any]]]:
            if batch_fn is not None:
                return [_score_with_batch_api(batch_fn, single_fn, [p.item for p in b], kwargs) for b in batches]
            futures = [
                pool.schedule(_score_batch, args=(scorer, [p.item for p in b], kwargs), timeout=timeout * len(b))
                for b in batches
            ]
            return [_collect(pool, scorer, b, f, timeout, kwargs) for b, f in zip(batches, futures, strict=True)]

        def write(batches: list[list[_Pending]]) -> None:
            """Score ``batches`` and append every usable result; then raise the first problem found."""
            first_error: Exception | None = None
            for batch, results in zip(batches, results_of(batches), strict=True):
                for pending, (status, payload) in zip(batch, results, strict=True):
                    error = _result_error(pending.where, status, payload)
                    if error is not None:
                        first_error = first_error or error
                        continue
                    data_source, problem_id, index = pending.key
                    record = {"problem_id": problem_id, "data_source": data_source, "sample_index": index} | payload
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    summary.scored += 1
                    summary.correct += int(payload["acc"])
                    if payload.get("reason"):
                        summary.reasons[str(payload["reason"])] += 1
                out.flush()
            os.fsync(out.fileno())
            if first_error is not None:
                raise first_error

        batches: list[list[_Pending]] = []
        current: list[_Pending] = []
        queued: set[tuple[str, int]] = set()
        read_error: EvalInputError | None = None
        try:
            for number, record in iter_jsonl(samples_path):
                where = location(samples_path, number)
                pending = _pending_sample(record, where)
                problem_key = (pending.key[1], pending.key[2])
                if problem_key in done:
                    summary.skipped += 1
                    continue
                if problem_key in queued:
                    raise EvalInputError(
                        f"{where}: field 'sample_index' {problem_key[1]} of problem {problem_key[0]!r} appears twice"
                    )
                queued.add(problem_key)
                current.append(pending)
                if len(current) >= batch_size:
                    batches.append(current)
                    current = []
                if len(batches) >= window:
                    todo, batches = batches, []
                    write(todo)
        except EvalInputError as exc:
            read_error = exc  # score what was read before the bad line first
        if current:
            batches.append(current)
        if batches:
            write(batches)
        if read_error is not None:
            raise read_error
    return summary


def _pending_sample(record: dict[str, Any], where: str) -> _Pending:
    key = sample_key(record, where)
    response = require(record, "response", str, where)
    ground_truth = record.get("ground_truth")
    if ground_truth is None:
        raise EvalInputError(f"{where}: field 'ground_truth' is missing")
    extra_info = record.get("extra_info")
    if extra_info is not None and not isinstance(extra_info, dict):
        raise EvalInputError(f"{where}: field 'extra_info' must be an object, got {type(extra_info).__name__}")
    return _Pending(where, key, (key[0], response, ground_truth, extra_info))


def _result_error(where: str, status: str, payload: Any) -> Exception | None:
    if status == "value_error":
        return EvalInputError(f"{where}: field 'ground_truth' (or 'data_source') rejected by the scorer: {payload}")
    if status == "error":
        return ScorerError(f"{where}: the scorer raised {payload}")
    if "_bad_result" in payload:
        return ScorerError(f"{where}: {payload['_bad_result']}; the scorer must return a dict with 'acc'")
    return None


def _collect(
    pool, scorer: str, batch: list[_Pending], future, timeout: float, kwargs: dict[str, Any]
) -> list[tuple[str, Any]]:
    from pebble import ProcessExpired

    try:
        return future.result()
    except FutureTimeout:
        if len(batch) == 1:
            return [("ok", {"acc": False, "score": 0.0, "reason": "timeout"})]
    except ProcessExpired:
        if len(batch) == 1:
            return [("ok", {"acc": False, "score": 0.0, "reason": "scorer_process_died"})]
    # Re-run one by one so only the sample at fault is marked.
    results = []
    for pending in batch:
        single = pool.schedule(_score_batch, args=(scorer, [pending.item], kwargs), timeout=timeout)
        results.extend(_collect(pool, scorer, [pending], single, timeout, kwargs))
    return results
