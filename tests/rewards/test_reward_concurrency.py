"""The time-bounded pool under threads and fork: verl calls compute_score from executor threads."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from reward_fns import bounded, compute_score

_GT_IF = str([{"instruction_id": ["punctuation:no_comma"], "kwargs": [{}]}])
_JOBS = [
    ("math", "\\boxed{\\sqrt{8}}", "2\\sqrt{2}", True),
    ("math", "\\boxed{2\\sqrt{3}}", "2\\sqrt{2}", False),
    ("aime24", "Answer: 17", "17", True),
    ("math", "\\boxed{\\frac{\\pi}{4}}", "\\pi/4", True),
    ("ifeval", "no commas at all", _GT_IF, True),
    ("ifeval", "a, b", _GT_IF, False),
]


def test_eight_threads_at_once_get_correct_results() -> None:
    jobs = _JOBS * 8
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda job: compute_score(job[0], job[1], job[2]), jobs))
    assert [r["acc"] for r in results] == [job[3] for job in jobs]


def test_timeouts_on_some_threads_do_not_disturb_others() -> None:
    tower = "\\boxed{2003^{2002^{2001}}}"
    jobs = [("math", tower, "1", False)] * 2 + _JOBS[:4]
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(lambda job: compute_score(job[0], job[1], job[2], timeout_seconds=1.0), jobs))
    assert [r["reason"] for r in results[:2]] == ["timeout", "timeout"]
    assert [r["acc"] for r in results[2:]] == [job[3] for job in jobs[2:]]
    assert time.monotonic() - start < 6.0
    assert threading.active_count() < 50  # no thread piles up behind killed workers


def test_killed_worker_does_not_take_the_caller_down() -> None:
    """A worker that dies mid-task (here: os._exit) is reported and replaced; the caller carries on."""
    pool = bounded.shared_pool()
    outcome = pool.run(os._exit, (3,), timeout=5.0)
    assert outcome is bounded.WORKER_CRASHED
    assert compute_score("math", "\\boxed{\\sqrt{9}}", "3")["acc"]


def _score_in_child(queue) -> None:  # runs in a forked child
    queue.put(compute_score("math", "\\boxed{\\sqrt{16}}", "4"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_usable_after_fork() -> None:
    compute_score("math", "\\boxed{\\sqrt{4}}", "2")  # the parent's pool is live when we fork
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_score_in_child, args=(queue,))
    child.start()
    result = queue.get(timeout=60)
    child.join(timeout=30)
    assert child.exitcode == 0
    assert result == {"score": 1.0, "acc": True, "reason": ""}
    assert compute_score("math", "\\boxed{\\sqrt{4}}", "2")["acc"]  # parent still fine


def test_pool_that_cannot_start_scores_instead_of_raising(monkeypatch) -> None:
    """If worker processes cannot be started at all, calls return reason pool_unavailable."""
    pool = bounded.BoundedPool(max_workers=1)

    def refuse(*_args, **_kwargs):
        raise OSError("cannot fork: resource temporarily unavailable")

    monkeypatch.setattr(bounded.pebble, "ProcessPool", refuse)
    assert pool.run(os.getpid, (), timeout=1.0) is bounded.POOL_UNAVAILABLE
    # Later calls fail fast (no new start attempt) until the retry time.
    monkeypatch.setattr(bounded.pebble, "ProcessPool", lambda *a, **k: pytest.fail("retried too early"))
    start = time.monotonic()
    assert pool.run(os.getpid, (), timeout=1.0) is bounded.POOL_UNAVAILABLE
    assert time.monotonic() - start < 0.5
