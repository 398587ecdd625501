"""Every recipe's dry run, as a real subprocess of its shell script, against the installed verl on CPU.

Each run composes verl's own Hydra config with the recipe's overrides, runs the layout / file / data
checks and verl's ``validate_config`` (with the plugin's ``algorithm.focal`` check), and prints the
resolved settings, which the tests compare with the paper's hyperparameters.
"""

from __future__ import annotations

import re

import pytest
from recipes_support import RECIPES, run_recipe

# recipe -> lines the resolved summary must contain
EXPECTED = {
    "f_grpo.sh": ["gamma             0.5", "vanilla / token-mean", "low=0.2 high=0.2", "TP=4 PP=2 CP=1 DP=2"],
    "grpo.sh": ["gamma             0", "vanilla / token-mean", "experiment=grpo-qwen2.5-7b"],
    "f_dapo.sh": [
        "gamma             0.5",
        "low=0.2 high=0.28 c=10.0",
        "dynamic sampling  True (metric=acc)",
        "signed via dapo manager",
    ],
    "dapo.sh": ["gamma             0", "low=0.2 high=0.28", "experiment=dapo-qwen2.5-7b"],
    "f_cispo.sh": ["gamma             1.0", "cispo / token-mean", "low=1.0 high=5.0"],
    "cispo.sh": ["gamma             0", "cispo / token-mean", "experiment=cispo-qwen2.5-7b"],
    "f_dapo_async.sh": [
        "async actor-learner (separate_async): staleness <= 1 versions",
        "learner 2x8=16, rollout 1x8=8",
        "low=0.2 high=0.28",
    ],
    "f_grpo_fsdp_small.sh": ["fsdp2 DP=8", "Qwen/Qwen3-4B-Base", "response <= 4096", "1x8=8", "enable_thinking=True"],
}


def test_every_recipe_is_covered() -> None:
    assert sorted(p.name for p in RECIPES.glob("*.sh")) == sorted(EXPECTED)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_recipe_dry_run(script: str, data_dir) -> None:
    result = run_recipe(script, env={"DRY_RUN": "1", "DATA_DIR": str(data_dir)})
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "DRY RUN OK" in out
    assert "focal_grpo (base=grpo)" in out
    assert "256 prompts x n=8 = 2048 responses/step; mini-batch 64 prompts -> 4 updates/step" in out
    assert "prompt <= 1024" in out
    assert "lr=1e-06 warmup=15 wd=0.01 epochs=10" in out
    assert "use_kl_loss" not in out and "loss=False in_reward=False" in out
    for line in EXPECTED[script]:
        assert line in out, f"{script}: {line!r} not in\n{out}"


def test_eight_node_llama_preset_with_flag(data_dir) -> None:
    """8 colocated nodes, a second preset, ``--dry-run`` given as a flag, and trailing overrides taking effect."""
    result = run_recipe(
        "f_cispo.sh",
        "--dry-run",
        "trainer.save_freq=100",
        "algorithm.focal.gamma=2",
        "actor_rollout_ref.actor.clip_ratio_high=4.0",
        env={"NNODES": "8", "MODEL_PRESET": "llama3.2-3b-instruct", "DATA_DIR": str(data_dir)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "gamma             2\n" in result.stdout  # trailing Hydra overrides win over the recipe's
    assert "low=1.0 high=4.0" in result.stdout
    assert "meta-llama/Llama-3.2-3B-Instruct" in result.stdout
    assert re.search(r"megatron TP=2 PP=1 CP=1 DP=32", result.stdout)
    assert "learner + rollout share 8x8=64" in result.stdout


def test_eight_node_async_readme_example(data_dir) -> None:
    """README: ``NNODES=8 ROLLOUT_NNODES=4 bash recipes/f_dapo_async.sh --dry-run``."""
    result = run_recipe(
        "f_dapo_async.sh", "--dry-run", env={"NNODES": "8", "ROLLOUT_NNODES": "4", "DATA_DIR": str(data_dir)}
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "megatron TP=4 PP=2 CP=1 DP=4" in result.stdout
    assert "learner 4x8=32, rollout 4x8=32" in result.stdout


def test_print_config_goes_through_verls_own_entry_point(data_dir) -> None:
    """``--print-config`` hands the recipe's overrides to ``python -m verl.trainer.main_ppo`` (Hydra ``--cfg job``):
    verl's real command line accepts every override and composes what the dry run checked."""
    import yaml

    result = run_recipe("f_dapo_async.sh", "--print-config", env={"DATA_DIR": str(data_dir)})
    assert result.returncode == 0, result.stderr[-3000:]
    cfg = yaml.safe_load(result.stdout)
    algorithm, actor = cfg["algorithm"], cfg["actor_rollout_ref"]["actor"]
    assert algorithm["adv_estimator"] == "focal_grpo"
    assert algorithm["focal"] == {"rewards": "signed", "gamma": 0.5, "metrics": {"port": 9464}}
    assert algorithm["filter_groups"]["enable"] is True and algorithm["filter_groups"]["metric"] == "acc"
    assert (actor["clip_ratio_low"], actor["clip_ratio_high"], actor["clip_ratio_c"]) == (0.2, 0.28, 10.0)
    assert actor["megatron"]["tensor_model_parallel_size"] == 4
    assert cfg["reward"]["reward_manager"]["name"] == "dapo"
    assert cfg["reward"]["reward_kwargs"]["overlong_buffer_cfg"]["len"] == 1024
    assert cfg["reward"]["reward_kwargs"]["max_resp_len"] == 8192
    assert cfg["reward"]["custom_reward_function"]["reward_kwargs"] == {"score_scheme": "signed"}
    assert cfg["trainer"]["v1"]["trainer_mode"] == "separate_async"
    assert cfg["trainer"]["nnodes"] == 2 and cfg["actor_rollout_ref"]["rollout"]["nnodes"] == 1
    assert cfg["actor_rollout_ref"]["hybrid_engine"] is False
