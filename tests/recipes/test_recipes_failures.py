"""Bad recipes fail in the dry run, on CPU, with a message naming the knob (env variable and Hydra key) and the fix.

Each case runs the real shell recipe as a subprocess; the exit status is 2 and nothing past the
pre-flight (Ray, verl's trainer) is reached.
"""

from __future__ import annotations

import pytest
from recipes_support import math_row, run_recipe, write_parquet

CASES = {
    "tp_x_pp_does_not_divide_gpus": (
        {"TRAIN_TP": "3"},
        [],
        [
            "TRAIN_TP (actor_rollout_ref.actor.megatron.tensor_model_parallel_size)=3",
            "TRAIN_PP (actor_rollout_ref.actor.megatron.pipeline_model_parallel_size)=2",
            "does not divide the 16 training GPUs",
            "fix: pick TRAIN_TP x TRAIN_PP from 1x1",
        ],
    ),
    "batch_not_divisible": (
        {"MINI_BATCH_SIZE": "60"},
        [],
        [
            "TRAIN_BATCH_SIZE (data.train_batch_size)=256 is not a multiple of "
            "MINI_BATCH_SIZE (actor_rollout_ref.actor.ppo_mini_batch_size)=60",
            "fix: MINI_BATCH_SIZE from",
        ],
    ),
    "rollout_tp_over_a_node": (
        {"ROLLOUT_TP": "16"},
        [],
        [
            "ROLLOUT_TP (actor_rollout_ref.rollout.tensor_model_parallel_size)=16",
            "a replica must sit inside one node; fix: ROLLOUT_TP<=8",
        ],
    ),
    "unknown_key": (
        {},
        ["actor_rollout_ref.actor.clip_ratio_hihg=0.3"],
        [
            "unknown config key actor_rollout_ref.actor.clip_ratio_hihg",
            "Did you mean actor_rollout_ref.actor.clip_ratio_high",
            "+actor_rollout_ref.actor.clip_ratio_hihg=VALUE",
        ],
    ),
    "async_without_rollout_nodes": (
        {"ROLLOUT_MODE": "async", "ROLLOUT_NNODES": "0"},
        [],
        [
            "ROLLOUT_NNODES (actor_rollout_ref.rollout.nnodes)=0",
            "fix: ROLLOUT_NNODES>=1",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_knob_is_named_with_its_fix(case: str, data_dir) -> None:
    env, args, expected = CASES[case]
    result = run_recipe("f_grpo.sh", "--dry-run", *args, env={"DATA_DIR": str(data_dir), **env})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "DRY RUN FAILED f_grpo" in result.stderr
    assert "DRY RUN OK" not in result.stdout
    for text in expected:
        assert text in result.stderr, f"{text!r} not in\n{result.stderr}"


def test_missing_data_and_bad_rows_are_reported_with_file_row_field(tmp_path, data_dir) -> None:
    """A missing validation file and model directory, and training rows the reward function or verl cannot use."""
    bad = [math_row("deepscaler", 0, "ok", "3"), math_row("deepscaler", 1, "no answer", "")]
    bad.append({**math_row("deepscaler", 2, "x", "4"), "data_source": None})
    train = write_parquet(tmp_path / "train.parquet", bad)
    result = run_recipe(
        "f_dapo.sh",
        env={
            "DRY_RUN": "1",
            "DATA_DIR": str(data_dir),
            "TRAIN_FILES": str(train),
            "VAL_FILES": "/nowhere/val.parquet",
            "MODEL_PATH": "/nowhere/model",
        },
    )
    assert result.returncode == 2, result.stdout + result.stderr
    err = result.stderr
    assert "VAL_FILES (data.val_files): validation data file /nowhere/val.parquet does not exist" in err
    assert "scripts/prepare_data.py" in err
    assert "MODEL_PATH (actor_rollout_ref.model.path)=/nowhere/model does not exist" in err
    assert f"{train}: row 1: field reward_model.ground_truth" in err
    assert "ground_truth is empty" in err
    assert f"{train}: row 2: field data_source: missing" in err
    assert f"{train}: row 0" not in err


def test_unknown_preset_stops_before_python() -> None:
    result = run_recipe("f_grpo.sh", "--dry-run", env={"MODEL_PRESET": "gpt-5"})
    assert result.returncode == 2
    assert "MODEL_PRESET=gpt-5 is unknown; use qwen2.5-7b, qwen3-4b-base or llama3.2-3b-instruct" in result.stderr
