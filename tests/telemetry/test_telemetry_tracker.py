"""PromptTracker against a plain-Python reference model, incl. eviction and state round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgrpo_verl.telemetry.tracker import PromptTracker


class Reference:
    def __init__(self, capacity):
        self.capacity = capacity
        self.rows = {}  # key -> [ds, rate, ever, last_step]

    def update(self, keys, ds, rates, step):
        for k, d, r in zip(keys, ds, rates, strict=True):
            row = self.rows.get(k)
            if row is None:
                if len(self.rows) >= self.capacity:
                    return
                row = self.rows[k] = [d, 0.0, False, step]
            row[1] = r
            row[2] = row[2] or r > 0
            row[3] = step

    def summary(self, ds, k):
        rows = [r for r in self.rows.values() if r[0] == ds]
        return (
            len(rows),
            sum(r[2] for r in rows),
            sum(r[1] > 0 for r in rows),
            sum(r[2] and r[1] == 0 for r in rows),
            float(np.mean([1 - (1 - r[1]) ** k for r in rows])) if rows else 0.0,
        )


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.lists(st.tuples(st.integers(0, 60), st.integers(0, 4)), min_size=1, max_size=20, unique_by=lambda t: t[0]),
        min_size=1,
        max_size=12,
    )
)
def test_matches_reference_without_eviction(steps):
    table = np.random.default_rng(1).integers(1, 2**63, size=61, dtype=np.uint64)
    tracker = PromptTracker(capacity=1000, history=3)
    ids = [tracker.data_source_id("a"), tracker.data_source_id("b")]
    ref = Reference(1000)
    for step, visits in enumerate(steps, start=1):
        keys = table[[v[0] for v in visits]]
        ds = np.asarray([ids[v[0] % 2] for v in visits])
        rates = np.asarray([v[1] / 4 for v in visits])
        tracker.update(keys, ds, rates, step)
        ref.update(keys.tolist(), ds.tolist(), rates.tolist(), step)
    summary = tracker.summary()
    for name, ds in (("a", ids[0]), ("b", ids[1])):
        tracked, ever, now, forgotten, p8 = ref.summary(ds, 8)
        s = summary[name]
        assert (s.tracked, s.ever_solved, s.solved_now, s.forgotten) == (tracked, ever, now, forgotten)
        assert s.pass_at_k[8] == pytest.approx(p8, abs=1e-9)


def test_forgotten_events_count_transitions_once():
    tracker = PromptTracker(capacity=10)
    ds = tracker.data_source_id("math")
    key = np.asarray([42], np.uint64)
    for step, rate in enumerate([0.0, 0.5, 0.0, 0.0, 0.25, 0.0], start=1):
        tracker.update(key, [ds], [rate], step)
    s = tracker.summary()["math"]
    assert s.forgotten == 1 and s.forgotten_events == 2
    assert tracker.history(42) == [0.0, 0.5, 0.0, 0.0, 0.25, 0.0]


def test_history_keeps_the_most_recent_rates():
    tracker = PromptTracker(capacity=10, history=3)
    ds = tracker.data_source_id("math")
    for step, rate in enumerate([0.25, 0.5, 0.75, 1.0], start=1):
        tracker.update(np.asarray([7], np.uint64), [ds], [rate], step)
    assert tracker.history(7) == [0.5, 0.75, 1.0]
    assert tracker.history(8) == []


def test_duplicate_keys_in_one_step_are_averaged():
    tracker = PromptTracker(capacity=10)
    ds = tracker.data_source_id("math")
    tracker.update(np.asarray([5, 5], np.uint64), [ds, ds], [0.0, 0.5], 1)
    assert tracker.size == 1 and tracker.history(5) == [0.25]


def test_eviction_keeps_memory_bounded_and_drops_least_recent():
    tracker = PromptTracker(capacity=100)
    ds = tracker.data_source_id("math")
    rng = np.random.default_rng(0)
    old = rng.integers(1, 2**63, size=100, dtype=np.uint64)
    tracker.update(old, np.full(100, ds), np.ones(100) * 0.5, 1)
    tracker.update(old[:10], np.full(10, ds), np.zeros(10), 2)  # recently seen: must survive
    new = rng.integers(1, 2**63, size=30, dtype=np.uint64)
    tracker.update(new, np.full(30, ds), np.ones(30), 3)
    assert tracker.size <= 100
    assert tracker.evictions >= 30
    assert all(tracker.history(int(k)) for k in old[:10])
    assert all(tracker.history(int(k)) for k in new)
    s = tracker.summary()["math"]
    assert s.tracked == tracker.size
    assert s.forgotten == 10  # the ten recently-seen prompts dropped to 0
    fresh = PromptTracker.from_state_dict(tracker.state_dict())
    assert fresh.summary() == tracker.summary()


def test_state_round_trip_is_exact():
    tracker = PromptTracker(capacity=5000, history=4)
    ids = [tracker.data_source_id(n) for n in ("math", "code")]
    rng = np.random.default_rng(3)
    keys = rng.integers(1, 2**63, size=3000, dtype=np.uint64)
    for step in range(1, 6):
        pick = rng.choice(3000, size=800, replace=False)
        tracker.update(keys[pick], np.asarray(ids)[pick % 2], rng.integers(0, 9, 800) / 8, step)
    state = tracker.state_dict()
    restored = PromptTracker.from_state_dict(state)
    for name, arr in restored.state_dict().items():
        np.testing.assert_array_equal(arr, state[name], err_msg=name)
    assert restored.summary() == tracker.summary()
    assert restored.nbytes() == tracker.nbytes()
    for k in keys[:50]:
        assert restored.history(int(k)) == tracker.history(int(k))


def test_data_source_labels_are_bounded():
    tracker = PromptTracker(capacity=10)
    ids = {tracker.data_source_id(f"ds{i}") for i in range(400)}
    assert len(tracker.data_sources) <= 256 and "other" in tracker.data_sources
    assert len(ids) == 256
