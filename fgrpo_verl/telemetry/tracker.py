"""Per-prompt success tracker: bounded memory, O(batch) work per step.

Keyed by a stable 64-bit prompt key (see :mod:`fgrpo_verl.telemetry.identity`), never by
verl's per-step ``uid``.  Everything lives in flat numpy arrays (about 60 bytes a prompt,
see BENCHMARKS.md): an open-addressing hash table maps keys to rows, and per-data_source
aggregates (ever solved, solved now, forgotten, pass@k proxy sums) are updated
incrementally from the rows a step touches, so a step costs O(groups in the batch), not
O(tracked prompts).  Beyond ``capacity`` the least recently seen prompts are evicted.

The pass@k proxy over the training set is ``mean_x 1 - (1 - p(x))^k`` with ``p(x)`` the
prompt's latest group success rate mu_hat (paper Eq. 11); a prompt is *forgotten* when it
was solved at some visit (mu_hat > 0) and has mu_hat = 0 at its latest visit -- the
paper's signal that rare solutions are being lost while pass@1 looks fine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PASS_AT_K = (1, 8, 64, 256)
MAX_DATA_SOURCES = 256
OTHER_DATA_SOURCE = "other"
_EMPTY = -1
_MIN_ROWS = 4096
# pass@k sums are kept in fixed point (int64, units of 2^-40): incremental updates and a full
# recomputation give bit-identical results, so a restored tracker reports exactly the same numbers.
_FIXED_ONE = float(2**40)


def _table_size(capacity: int) -> int:
    size = 1024
    while size < 2 * capacity:  # load factor <= 0.5 keeps linear probes short
        size *= 2
    return size


def pass_at_k_proxy(rates: np.ndarray, k: int) -> np.ndarray:
    """1 - (1 - p)^k per prompt (float64)."""
    return 1.0 - np.power(1.0 - rates.astype(np.float64), k)


@dataclass(frozen=True)
class DataSourceSummary:
    """Aggregates of one data_source over its tracked prompts."""

    tracked: int
    ever_solved: int
    solved_now: int
    forgotten: int
    forgotten_events: int
    pass_at_k: dict[int, float]


class PromptTracker:
    """Success-rate history of up to ``capacity`` prompts, grouped by data_source."""

    def __init__(self, capacity: int = 1_000_000, history: int = 8, ks: tuple[int, ...] = PASS_AT_K):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if history < 1:
            raise ValueError(f"history must be >= 1, got {history}")
        self.capacity = int(capacity)
        self.history_len = int(history)
        self.ks = tuple(int(k) for k in ks)
        self.size = 0
        self.evictions = 0
        self.data_sources: list[str] = []
        self._ds_ids: dict[str, int] = {}
        # Arrays grow geometrically up to capacity (sizes depend only on the prompt count, see _rows_for).
        self._alloc(self._rows_for(1))
        self._reset_aggregates()

    # ------------------------------------------------------------------ storage
    def _rows_for(self, n: int) -> int:
        rows = _MIN_ROWS
        while rows < n:
            rows *= 2
        return min(self.capacity, rows)

    def _alloc(self, rows: int) -> None:
        old = getattr(self, "keys", None)
        n = self.size
        new = {
            "keys": np.zeros(rows, np.uint64),
            "ds": np.zeros(rows, np.uint16),
            "rate": np.zeros(rows, np.float32),
            "ever": np.zeros(rows, np.bool_),
            "last_step": np.zeros(rows, np.int64),
            "visits": np.zeros(rows, np.int32),
            "hist": np.full((rows, self.history_len), np.nan, np.float16),
        }
        if old is not None:
            for name, arr in new.items():
                arr[:n] = getattr(self, name)[:n]
        for name, arr in new.items():
            setattr(self, name, arr)
        self._rebuild_table()

    def _rebuild_table(self) -> None:
        self._slots = np.full(_table_size(len(self.keys)), _EMPTY, np.int32)
        self._mask = np.uint64(len(self._slots) - 1)
        if self.size:
            self._place(np.arange(self.size, dtype=np.int32))

    def _home(self, keys: np.ndarray) -> np.ndarray:
        # Keys are blake2b digests: their low bits are already uniform.
        return (keys & self._mask).astype(np.int64)

    def _place(self, rows: np.ndarray) -> None:
        """Insert rows (whose keys are absent and distinct) into the hash table."""
        pos = self._home(self.keys[rows])
        mask = int(self._mask)
        pending = np.arange(rows.shape[0])
        claim = np.empty(len(self._slots), np.int64)  # scratch; np.empty touches only the pages written
        while pending.size:
            p = pos[pending]
            free = self._slots[p] == _EMPTY
            # Several pending keys may want the same free slot: one wins (whichever scatter wrote last),
            # the others probe on.  O(pending) per round, no sort.
            cand = pending[free]
            want = p[free]
            claim[want] = cand
            winners = cand[claim[want] == cand]
            self._slots[pos[winners]] = rows[winners]
            placed = np.zeros(rows.shape[0], np.bool_)
            placed[winners] = True
            pending = pending[~placed[pending]]
            pos[pending] = (pos[pending] + 1) & mask

    def _find(self, keys: np.ndarray) -> np.ndarray:
        """Row of each key, or -1 when absent (vectorised linear probing)."""
        out = np.full(keys.shape[0], -1, np.int64)
        if self.size == 0 or keys.size == 0:
            return out
        pos = self._home(keys)
        mask = int(self._mask)
        pending = np.arange(keys.shape[0])
        while pending.size:
            rows = self._slots[pos[pending]]
            occupied = rows != _EMPTY
            match = np.zeros(pending.shape[0], np.bool_)
            match[occupied] = self.keys[rows[occupied]] == keys[pending[occupied]]
            out[pending[match]] = rows[match]
            pending = pending[occupied & ~match]
            pos[pending] = (pos[pending] + 1) & mask
        return out

    # ------------------------------------------------------------ data sources
    def data_source_id(self, name: str) -> int:
        """Id of a data_source label (at most MAX_DATA_SOURCES distinct; the rest share 'other')."""
        ds = self._ds_ids.get(name)
        if ds is not None:
            return ds
        if len(self.data_sources) >= MAX_DATA_SOURCES - 1 and name != OTHER_DATA_SOURCE:
            return self.data_source_id(OTHER_DATA_SOURCE)
        ds = len(self.data_sources)
        self.data_sources.append(name)
        self._ds_ids[name] = ds
        self._grow_aggregates()
        return ds

    def _reset_aggregates(self) -> None:
        n = len(self.data_sources)
        self._tracked = np.zeros(n, np.int64)
        self._ever = np.zeros(n, np.int64)
        self._now = np.zeros(n, np.int64)
        self._forgotten = np.zeros(n, np.int64)
        self._passk = np.zeros((n, len(self.ks)), np.int64)
        self._forgotten_events = getattr(self, "_forgotten_events", np.zeros(n, np.int64))

    def _grow_aggregates(self) -> None:
        n = len(self.data_sources)
        for name in ("_tracked", "_ever", "_now", "_forgotten", "_forgotten_events"):
            arr = getattr(self, name)
            setattr(self, name, np.concatenate([arr, np.zeros(n - arr.shape[0], arr.dtype)]))
        self._passk = np.concatenate([self._passk, np.zeros((n - self._passk.shape[0], len(self.ks)), np.int64)])

    def _contrib(self, rows: np.ndarray, sign: int) -> None:
        """Add (sign=+1) or remove (-1) the rows' contribution to the per-data_source aggregates."""
        if rows.size == 0:
            return
        n = len(self.data_sources)
        ds = self.ds[rows].astype(np.int64)
        rate = self.rate[rows]
        ever = self.ever[rows]
        self._tracked += sign * np.bincount(ds, minlength=n)
        self._ever += sign * np.bincount(ds, weights=ever, minlength=n).astype(np.int64)
        self._now += sign * np.bincount(ds, weights=rate > 0, minlength=n).astype(np.int64)
        self._forgotten += sign * np.bincount(ds, weights=ever & (rate <= 0), minlength=n).astype(np.int64)
        for j, k in enumerate(self.ks):
            fixed = np.rint(pass_at_k_proxy(rate, k) * _FIXED_ONE).astype(np.int64)
            sums = np.zeros(n, np.int64)
            np.add.at(sums, ds, fixed)
            self._passk[:, j] += sign * sums

    def _recompute_aggregates(self) -> None:
        events = self._forgotten_events
        self._reset_aggregates()
        self._forgotten_events = events
        self._contrib(np.arange(self.size), +1)

    # ------------------------------------------------------------------ update
    def update(self, keys: np.ndarray, ds_ids: np.ndarray, rates: np.ndarray, step: int) -> int:
        """Record one visit of each prompt (a group's success rate at ``step``).

        Args:
            keys: (G,) uint64 stable prompt keys; repeated keys in one call are averaged.
            ds_ids: (G,) data_source ids from :meth:`data_source_id`.
            rates: (G,) group success rates mu_hat in [0, 1].
            step: the training step.

        Returns:
            The number of prompts that became forgotten with this update.
        """
        keys = np.asarray(keys, np.uint64)
        if keys.size == 0:
            return 0
        rates = np.asarray(rates, np.float64)
        ds_ids = np.asarray(ds_ids, np.int64)
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if uniq.shape[0] != keys.shape[0]:
            rates = np.bincount(inverse, weights=rates) / np.bincount(inverse)
            ds_ids = ds_ids[first]
            keys = uniq
        rows = self._find(keys)
        missing = rows < 0
        n_missing = int(missing.sum())
        if n_missing and self.size + n_missing > self.capacity:
            self.last_step[rows[~missing]] = step  # this batch's prompts are the most recent: keep them
            self._evict(self.size + n_missing - self.capacity)
            rows = self._find(keys)
            missing = rows < 0
            room = self.capacity - self.size
            if int(missing.sum()) > room:  # more new prompts in one batch than the whole capacity
                keep = np.flatnonzero(~missing | (np.cumsum(missing) <= room))
                keys, ds_ids, rates, rows, missing = keys[keep], ds_ids[keep], rates[keep], rows[keep], missing[keep]
        if missing.any():
            rows[missing] = self._insert(keys[missing], ds_ids[missing])
        return self._visit(rows, rates.astype(np.float32), step)

    def _insert(self, keys: np.ndarray, ds_ids: np.ndarray) -> np.ndarray:
        m = keys.shape[0]
        if self.size + m > len(self.keys):
            self._alloc(self._rows_for(self.size + m))
        rows = np.arange(self.size, self.size + m, dtype=np.int32)
        self.keys[rows] = keys
        self.ds[rows] = ds_ids
        self.rate[rows] = 0.0
        self.ever[rows] = False
        self.visits[rows] = 0
        self.hist[rows] = np.nan
        self.size += m
        self._place(rows)
        return rows.astype(np.int64)

    def _evict(self, at_least: int) -> None:
        """Drop the least recently seen prompts (a twentieth of capacity at a time, amortising the rebuild)."""
        drop = min(self.size, max(at_least, self.capacity // 20))
        keep = np.sort(np.argpartition(self.last_step[: self.size], drop - 1)[drop:]) if drop else np.arange(0)
        for name in ("keys", "ds", "rate", "ever", "last_step", "visits", "hist"):
            arr = getattr(self, name)
            arr[: keep.shape[0]] = arr[keep]
        self.size = int(keep.shape[0])
        self.evictions += drop
        self._rebuild_table()
        self._recompute_aggregates()

    def _visit(self, rows: np.ndarray, rates: np.ndarray, step: int) -> int:
        new = self.visits[rows] == 0
        old_rows = rows[~new]
        was_forgotten = self.ever[rows] & (self.rate[rows] <= 0) & ~new
        self._contrib(old_rows, -1)
        solved = rates > 0
        self.rate[rows] = rates
        self.ever[rows] |= solved
        self.last_step[rows] = step
        col = self.visits[rows] % self.history_len
        self.hist[rows, col] = rates
        self.visits[rows] += 1
        self._contrib(rows, +1)
        became = self.ever[rows] & ~solved & ~was_forgotten
        if became.any():
            n = len(self.data_sources)
            self._forgotten_events += np.bincount(self.ds[rows[became]].astype(np.int64), minlength=n)
        return int(became.sum())

    # ----------------------------------------------------------------- queries
    def summary(self) -> dict[str, DataSourceSummary]:
        """Per-data_source aggregates (data sources with no tracked prompt included, all zero)."""
        out = {}
        for ds, name in enumerate(self.data_sources):
            tracked = int(self._tracked[ds])
            out[name] = DataSourceSummary(
                tracked=tracked,
                ever_solved=int(self._ever[ds]),
                solved_now=int(self._now[ds]),
                forgotten=int(self._forgotten[ds]),
                forgotten_events=int(self._forgotten_events[ds]),
                pass_at_k={
                    k: (float(self._passk[ds, j]) / _FIXED_ONE / tracked if tracked else 0.0)
                    for j, k in enumerate(self.ks)
                },
            )
        return out

    def history(self, key: int) -> list[float]:
        """Recorded success rates of one prompt, oldest first (empty if untracked)."""
        row = int(self._find(np.asarray([key], np.uint64))[0])
        if row < 0:
            return []
        visits = int(self.visits[row])
        h = self.history_len
        order = [(visits - h + i) % h for i in range(h)] if visits >= h else list(range(visits))
        return [float(self.hist[row, c]) for c in order]

    def nbytes(self) -> int:
        arrays = (self.keys, self.ds, self.rate, self.ever, self.last_step, self.visits, self.hist, self._slots)
        return int(sum(a.nbytes for a in arrays))

    # ------------------------------------------------------------- state dict
    def state_dict(self) -> dict[str, np.ndarray]:
        """Plain numpy arrays (no pickle needed) describing the whole tracker."""
        n = self.size
        return {
            "format": np.asarray(1, np.int64),
            "capacity": np.asarray(self.capacity, np.int64),
            "history_len": np.asarray(self.history_len, np.int64),
            "ks": np.asarray(self.ks, np.int64),
            "evictions": np.asarray(self.evictions, np.int64),
            "data_sources": np.asarray(self.data_sources, dtype=np.str_),
            "forgotten_events": self._forgotten_events.copy(),
            "keys": self.keys[:n].copy(),
            "ds": self.ds[:n].copy(),
            "rate": self.rate[:n].copy(),
            "ever": self.ever[:n].copy(),
            "last_step": self.last_step[:n].copy(),
            "visits": self.visits[:n].copy(),
            "hist": self.hist[:n].copy(),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, np.ndarray], capacity: int | None = None) -> PromptTracker:
        """Rebuild a tracker; ``capacity`` may differ from the saved one (extra prompts are evicted)."""
        if int(state["format"]) != 1:
            raise ValueError(f"unsupported tracker state format {int(state['format'])}")
        tracker = cls(
            capacity=int(capacity or state["capacity"]),
            history=int(state["history_len"]),
            ks=tuple(int(k) for k in state["ks"]),
        )
        for name in state["data_sources"].tolist():
            tracker.data_source_id(str(name))
        n = int(state["keys"].shape[0])
        tracker.keys = np.zeros(0, np.uint64)  # force a fresh allocation of the right size
        tracker.size = 0
        tracker._alloc(tracker._rows_for(n) if n <= tracker.capacity else n)
        for name in ("keys", "ds", "rate", "ever", "last_step", "visits", "hist"):
            getattr(tracker, name)[:n] = state[name]
        tracker.size = n
        tracker.evictions = int(state["evictions"])
        tracker._forgotten_events = state["forgotten_events"].astype(np.int64).copy()
        tracker._rebuild_table()
        tracker._recompute_aggregates()
        if n > tracker.capacity:
            tracker._evict(n - tracker.capacity)
        return tracker
