"""Shared fixtures: one warm worker pool for the whole reward test session (start-up costs ~1 s)."""

from __future__ import annotations

import pytest

from reward_fns import bounded


@pytest.fixture(scope="session", autouse=True)
def _close_pool_at_end():
    yield
    bounded.shared_pool().close()
