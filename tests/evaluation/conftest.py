"""Fixtures of the pass@k tests."""

from __future__ import annotations

import pytest
from passk_helpers import install_boxed_scorer


@pytest.fixture
def boxed_scorer(tmp_path) -> str:
    return install_boxed_scorer(tmp_path)
