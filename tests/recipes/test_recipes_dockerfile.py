"""The Dockerfile is hadolint clean and consistent with the repository (no docker engine exists here, so the
image itself is not built in the tests: the base tag and digest were looked up, not pulled)."""

from __future__ import annotations

import re
import subprocess

from recipes_support import REPO, tool

DOCKERFILE = REPO / "Dockerfile"


def test_hadolint_clean() -> None:
    result = subprocess.run([tool("hadolint"), str(DOCKERFILE)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_base_image_is_pinned_by_digest() -> None:
    text = DOCKERFILE.read_text()
    match = re.search(r"^ARG BASE_IMAGE=(\S+)$", text, re.MULTILINE)
    assert match, "BASE_IMAGE default missing"
    assert re.fullmatch(r"verlai/verl:vllm024\.[\w.]+@sha256:[0-9a-f]{64}", match.group(1))
    assert "FROM ${BASE_IMAGE}" in text


def test_verl_pin_matches_constraints() -> None:
    pinned = re.search(r"^verl==(\S+)$", (REPO / "constraints.txt").read_text(), re.MULTILINE)
    assert pinned
    assert f'"verl[verl-core]=={pinned.group(1)}"' in DOCKERFILE.read_text()


def test_copied_paths_exist_and_are_not_ignored() -> None:
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines() if line.strip()}
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (REPO / source).exists(), f"COPY {source}: missing"
                assert source not in ignored, f"COPY {source}: excluded by .dockerignore"
