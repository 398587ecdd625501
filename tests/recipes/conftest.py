"""Fixtures for the recipe tests: the verl-format parquet files the recipes read, written by the tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from recipes_support import math_row, write_parquet


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the recipes read by default (DATA_DIR layout of scripts/prepare_data.py)."""
    root = tmp_path_factory.mktemp("data")
    answers = ["3", "\\frac{1}{2}", "12", "\\sqrt{2}", "7", "100", "0.25", "-4"]
    rows = [math_row("deepscaler", i, f"What is problem {i}?", a) for i, a in enumerate(answers)]
    write_parquet(root / "deepscaler.parquet", rows)
    for name in ("math500", "aime24", "aime25", "amc23"):
        write_parquet(root / f"{name}.parquet", [math_row(name, i, f"{name} {i}", "5", "test") for i in range(3)])
    return root
