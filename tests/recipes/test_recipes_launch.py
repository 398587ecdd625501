"""The launch path (no dry run) on each node role, up to the point where a GPU cluster is needed.

There is no Ray cluster with GPUs here, so the ``ray`` command is replaced by a recorder on PATH: the
tests see exactly which Ray command each node would run, and that a bad config stops on node 0 before
Ray or verl's trainer is started.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from recipes_support import run_recipe


@pytest.fixture
def ray_recorder(tmp_path: Path) -> tuple[dict[str, str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "ray-calls.txt"
    stub = bin_dir / "ray"
    stub.write_text(f'#!/usr/bin/env bash\necho "ray $*" >> "{log}"\n')
    stub.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}, log


def test_bad_config_stops_on_the_head_before_ray(ray_recorder, data_dir) -> None:
    env, log = ray_recorder
    result = run_recipe(
        "f_grpo.sh",
        env={**env, "DATA_DIR": str(data_dir), "TRAIN_TP": "3", "NODE_RANK": "0", "HEAD_IP": "127.0.0.1"},
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "DRY RUN FAILED f_grpo" in result.stderr and "TRAIN_TP" in result.stderr
    assert not log.exists(), log.read_text()
    assert "launching" not in result.stdout


def test_worker_node_waits_for_the_head_then_joins_and_blocks(ray_recorder) -> None:
    """A real TCP listener stands in for the head's Ray port; the worker joins once it accepts connections."""
    env, log = ray_recorder
    with socket.create_server(("127.0.0.1", 0)) as head:
        port = str(head.getsockname()[1])
        result = run_recipe(
            "f_dapo.sh",
            env={**env, "NODE_RANK": "1", "HEAD_IP": "127.0.0.1", "RAY_PORT": port, "GPUS_PER_NODE": "4"},
        )
    assert result.returncode == 0, result.stderr
    assert log.read_text().splitlines() == [
        f"ray start --address=127.0.0.1:{port} --num-gpus=4 --metrics-export-port=8080 --block"
    ]


def test_worker_gives_up_when_the_head_never_comes_up(ray_recorder) -> None:
    env, log = ray_recorder
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = str(closed.getsockname()[1])  # nothing listens here once the socket is closed
    result = run_recipe(
        "f_grpo.sh", env={**env, "NODE_RANK": "1", "HEAD_IP": "127.0.0.1", "RAY_PORT": port, "RAY_WAIT_SECONDS": "0"}
    )
    assert result.returncode == 3
    assert f"no Ray head at 127.0.0.1:{port} after 0s; start node 0 (NODE_RANK=0) too" in result.stderr
    assert not log.exists()


def test_multi_node_needs_the_head_address(ray_recorder) -> None:
    env, log = ray_recorder
    result = run_recipe("f_cispo.sh", env={**env, "NODE_RANK": "1"})
    assert result.returncode == 2
    assert "HEAD_IP is empty: with NNODES=2 every node needs node 0's IP" in result.stderr
    assert not log.exists()
