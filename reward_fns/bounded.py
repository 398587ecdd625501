"""Hard time bounds for reward work, without signals.

verl calls a synchronous ``compute_score`` on an executor thread, where ``signal.alarm`` cannot be used
and a runaway sympy call cannot be interrupted. The expensive part of scoring therefore runs in a
pebble ``ProcessPool``: a task that overruns its bound has its worker process terminated and replaced,
and the caller gets :data:`TIMEOUT` back. Workers are warm (started once, reused for every task) and
forked from a forkserver that has already imported the scorers, so a replacement costs milliseconds.

One pool per process, created lazily under a lock; safe to use from many threads at once, inside Ray
actors, and after ``os.fork`` (a child notices the pid change and builds its own pool).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import multiprocessing
import multiprocessing.util
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pebble

DEFAULT_TIMEOUT_SECONDS = 5.0
# Extra wait beyond the bound for pebble to notice the overrun, terminate the worker and report.
SLACK_SECONDS = 1.0
POOL_WORKERS_ENV = "FGRPO_REWARD_POOL_WORKERS"
# Modules imported once in the forkserver, inherited by every worker (sympy, latex2sympy, math-verify).
# "__main__" first, as the stdlib default does: otherwise every new worker re-imports the main script
# (in a Ray worker that is Ray itself, seconds per worker). Scripts need the usual ``__main__`` guard.
_PRELOAD = ["__main__", "reward_fns.math.worker", "reward_fns.ifeval"]
# Generous: the first pool of a process starts a forkserver that imports sympy and math-verify.
START_TIMEOUT_SECONDS = 60.0
RETRY_AFTER_SECONDS = 30.0

_logger = logging.getLogger(__name__)


class _Outcome:
    """Sentinel for a task that produced no value; ``reason`` lands in the result dict."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<{self.reason}>"


TIMEOUT = _Outcome("timeout")
WORKER_CRASHED = _Outcome("worker_crashed")
INTERNAL_ERROR = _Outcome("internal_error")
POOL_UNAVAILABLE = _Outcome("pool_unavailable")


def _ready() -> bool:
    return True


def default_pool_workers() -> int:
    env = os.environ.get(POOL_WORKERS_ENV)
    if env:
        try:
            workers = int(env)
        except ValueError as exc:
            raise ValueError(f"{POOL_WORKERS_ENV}={env!r} must be a positive integer") from exc
        if workers < 1:
            raise ValueError(f"{POOL_WORKERS_ENV}={env!r} must be a positive integer")
        return workers
    # Every verl reward actor owns a pool: cap the default so many actors do not oversubscribe a node.
    return max(1, min(os.cpu_count() or 1, 8))


def check_timeout(timeout_seconds: Any) -> float:
    from reward_fns.errors import RewardSettingError

    try:
        value = float(timeout_seconds)
    except (TypeError, ValueError):
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise RewardSettingError(
            f"reward kwarg timeout_seconds={timeout_seconds!r} must be a positive, finite number of seconds"
        )
    return value


class BoundedPool:
    """A warm process pool whose every task has a hard wall-clock bound."""

    def __init__(self, max_workers: int | None = None) -> None:
        self.max_workers = max_workers or default_pool_workers()
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._pool: pebble.ProcessPool | None = None
        self._inflight = 0  # tasks scheduled and not finished, across all calling threads
        self._retry_at = 0.0  # after a failed start, calls fail fast until then instead of waiting again

    def _context(self) -> Any:
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        if main_file is not None and not os.path.exists(main_file):
            # Code read from stdin: forkserver children would try to re-import "<stdin>" and die. Plain
            # fork needs no main module (the risk of forking a threaded process is accepted here only).
            return multiprocessing.get_context("fork")
        # forkserver: never fork a process that has threads (verl reward actors do); preload the scorers.
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        return ctx

    def _get(self) -> pebble.ProcessPool:
        with self._lock:
            if self._pool is None or not self._pool.active:
                if time.monotonic() < self._retry_at:
                    raise RuntimeError("reward worker pool failed to start recently; retrying later")
                try:
                    self._pool = self._start()
                except Exception:
                    self._retry_at = time.monotonic() + RETRY_AFTER_SECONDS
                    _logger.error(
                        "reward worker processes could not start; scores needing them get reason "
                        "'pool_unavailable' for the next %.0f s. Workers import the main script like any "
                        "multiprocessing child: run from a file with an `if __name__ == '__main__':` guard "
                        "(not from stdin).",
                        RETRY_AFTER_SECONDS,
                    )
                    raise
            return self._pool

    def _start(self) -> pebble.ProcessPool:
        pool = pebble.ProcessPool(max_workers=self.max_workers, context=self._context())
        # Stop the workers before multiprocessing joins a process's children at exit (a process that used
        # the pool, e.g. a forked child, would otherwise wait on them for ever).
        multiprocessing.util.Finalize(self, self.close, exitpriority=10)
        # Pay start-up before the first deadline starts: every worker answers once.
        try:
            ready = [pool.schedule(_ready) for _ in range(self.max_workers)]
            for future in ready:
                future.result(timeout=START_TIMEOUT_SECONDS)
        except BaseException:
            pool.stop()
            raise
        return pool

    def _reset(self, broken: pebble.ProcessPool) -> None:
        with self._lock:
            if self._pool is broken:
                self._pool = None
        with contextlib.suppress(Exception):  # best effort clean-up of an already broken pool
            broken.stop()

    def run_many(self, fn: Callable[..., Any], arg_tuples: Sequence[tuple], timeout: float) -> list[Any]:
        """Run ``fn(*args)`` for each tuple in parallel; each result is a value or an ``_Outcome``.

        Each task is killed after ``timeout`` seconds of running. The caller waits at most the time the
        pool needs to run everything queued ahead of it plus its own tasks at ``timeout`` each, plus
        slack: tasks queued behind other threads' work are not cut short, and a stuck pool cannot hang
        the caller either.
        """
        if not arg_tuples:
            return []
        with self._lock:
            self._inflight += len(arg_tuples)
            queued = self._inflight
        try:
            futures = self._schedule_all(fn, arg_tuples, timeout)
        except Exception:  # no pool (cannot start processes): score, never stop the run
            self._task_done(len(arg_tuples))
            _logger.exception("reward worker pool unavailable")
            return [POOL_UNAVAILABLE] * len(arg_tuples)
        except BaseException:
            self._task_done(len(arg_tuples))
            raise
        for future in futures:
            future.add_done_callback(lambda _: self._task_done(1))
        waves = -(-queued // self.max_workers)
        deadline = time.monotonic() + waves * timeout + SLACK_SECONDS
        return [self._collect(f, deadline) for f in futures]

    def _schedule_all(self, fn: Callable[..., Any], arg_tuples: Sequence[tuple], timeout: float) -> list:
        pool = self._get()
        try:
            return [pool.schedule(fn, args=args, timeout=timeout) for args in arg_tuples]
        except Exception:  # a pool stopped under us (interpreter shutdown, broken pool): rebuild once
            self._reset(pool)
            pool = self._get()
            return [pool.schedule(fn, args=args, timeout=timeout) for args in arg_tuples]

    def _task_done(self, count: int) -> None:
        with self._lock:
            self._inflight -= count

    def run(self, fn: Callable[..., Any], args: tuple, timeout: float) -> Any:
        return self.run_many(fn, [args], timeout)[0]

    @staticmethod
    def _collect(future: pebble.ProcessFuture, deadline: float) -> Any:
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except (concurrent.futures.TimeoutError, TimeoutError):
            future.cancel()  # pending: dropped; running: pebble terminates the worker
            return TIMEOUT
        except pebble.ProcessExpired as exc:
            _logger.warning("reward worker died (%s); it was replaced", exc)
            return WORKER_CRASHED
        except concurrent.futures.CancelledError:
            return TIMEOUT
        except Exception as exc:
            _logger.warning("reward worker task failed: %r", exc)
            return INTERNAL_ERROR

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            pool.join(timeout=5)


_shared: BoundedPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> BoundedPool:
    """The process-wide pool (rebuilt in a forked child, whose copy has no live threads)."""
    global _shared
    pid = os.getpid()
    with _shared_lock:
        if _shared is None or _shared._pid != pid:
            _shared = BoundedPool()
        return _shared


def _reinit_after_fork() -> None:
    # The lock may have been held by another thread at fork time: the child gets fresh ones.
    global _shared, _shared_lock
    _shared = None
    _shared_lock = threading.Lock()
    _forget_parent_forkserver()


def _forget_parent_forkserver() -> None:
    """Let a forked child start its own forkserver.

    The stdlib keeps one forkserver per process in module state; a forked child inherits the parent's pid
    and socket, and ``ensure_running`` then fails with ChildProcessError (``waitpid`` on a process that is
    not its child). Clearing that state makes the child start a fresh server on first use. Guarded by
    tests/rewards/test_reward_concurrency.py::test_usable_after_fork.
    """
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    if server is None or getattr(server, "_forkserver_pid", None) is None:
        return
    alive_fd = getattr(server, "_forkserver_alive_fd", None)
    if alive_fd is not None:
        with contextlib.suppress(OSError):
            os.close(alive_fd)  # the child's copy only; the parent keeps its server alive
    server._forkserver_address = None
    server._forkserver_alive_fd = None
    server._forkserver_pid = None
    server._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reinit_after_fork)
