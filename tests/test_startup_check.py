"""Settings are validated by verl's own start-up path: Hydra composition + validate_config, before Ray/GPUs."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import verl.trainer.main_ppo as main_ppo
import verl.utils.config as verl_config_module

from fgrpo_verl.settings import FocalConfigError
from fgrpo_verl.startup_check import validate_focal_config
from fgrpo_verl.verl_config import compose_verl_config, validate_verl_config

README = Path(__file__).resolve().parents[1] / "README.md"

# The rest of a typical user's GRPO command (what the README's overrides are added to).
USER_GRPO_COMMAND = [
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.n=8",
    "data.train_batch_size=256",
    "actor_rollout_ref.actor.ppo_mini_batch_size=64",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
]


def readme_overrides(name: str) -> list[str]:
    """The override lines of the README block marked ``<!-- overrides: NAME -->``."""
    match = re.search(rf"<!-- overrides: {name} -->\s*```text\n(.*?)```", README.read_text(), re.S)
    assert match, f"README has no overrides block {name!r}"
    return [line.strip() for line in match.group(1).splitlines() if line.strip()]


def test_verl_still_validates_through_the_wrapped_function():
    """Fails loudly if verl stops calling verl.utils.config.validate_config from main_ppo.main."""
    assert main_ppo.validate_config is verl_config_module.validate_config
    assert getattr(main_ppo.validate_config, "__fgrpo_verl_wrapped__", False)
    source = inspect.getsource(main_ppo.main)
    assert source.index("validate_config(") < source.index("run_ppo("), "validation must precede run_ppo"


@pytest.mark.parametrize("engine", [[], ["model_engine=megatron"]])
@pytest.mark.parametrize(
    "recipe,gamma,rewards", [("f-grpo", 0.5, "binary"), ("f-dapo", 0.5, "signed"), ("f-cispo", 1.0, "binary")]
)
def test_readme_overrides_pass_verl_composition_and_validation(engine, recipe, gamma, rewards):
    config = compose_verl_config([*engine, *USER_GRPO_COMMAND, *readme_overrides(recipe)])
    validate_verl_config(config)
    settings = validate_focal_config(config)
    assert settings is not None and settings.gamma == gamma and settings.rewards == rewards
    if engine:
        assert config.actor_rollout_ref.actor.strategy == "megatron"


def test_f_dapo_threshold_accounts_for_overlong_penalty():
    config = compose_verl_config([*USER_GRPO_COMMAND, *readme_overrides("f-dapo")])
    settings = validate_focal_config(config)
    assert settings.overlong_penalty == 1.0 and settings.success_threshold == -0.5


@pytest.mark.parametrize(
    "override,message",
    [
        ("+algorithm.focal.gamma=-1", r"algorithm\.focal\.gamma=-1\.0 is negative"),
        ("+algorithm.focal.gamma=nan", r"algorithm\.focal\.gamma=.*must be finite"),
        ("+algorithm.focal.gama=1", r"unknown setting algorithm\.focal\.gama; valid keys are"),
        ("+algorithm.focal.base=ppo", r"algorithm\.focal\.base='ppo' is not supported; use one of grpo, rloo"),
        ("+algorithm.focal.rewards=ternary", r"algorithm\.focal\.rewards='ternary' is not supported"),
    ],
)
def test_bad_settings_fail_in_verl_validate_config(override, message):
    config = compose_verl_config([*USER_GRPO_COMMAND, "algorithm.adv_estimator=focal_grpo", override])
    with pytest.raises(FocalConfigError, match=message):
        validate_verl_config(config)


def test_inseparable_reward_scheme_is_rejected():
    config = compose_verl_config(
        [
            *USER_GRPO_COMMAND,
            *[o for o in readme_overrides("f-dapo") if "focal.rewards" not in o],  # 0/1 rewards + penalty 1.0
        ]
    )
    with pytest.raises(FocalConfigError, match="no better than a wrong one"):
        validate_verl_config(config)


def test_main_ppo_stops_before_ray_on_a_bad_setting(tmp_path):
    """The real trainer entry point, as a user runs it: it must fail in validation, before ray.init."""
    cmd = [
        sys.executable,
        "-m",
        "verl.trainer.main_ppo",
        *USER_GRPO_COMMAND,
        "algorithm.adv_estimator=focal_grpo",
        "+algorithm.focal.gamma=-0.5",
        f"hydra.run.dir={tmp_path}",
    ]
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:1"}  # any attempt to reach Ray would fail differently
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode != 0
    assert "algorithm.focal.gamma=-0.5 is negative" in proc.stderr
    assert "ray.init" not in proc.stderr and "Started a local Ray instance" not in proc.stderr + proc.stdout


def test_check_config_cli_reports_rejection():
    cmd = [sys.executable, "-m", "fgrpo_verl.cli", "check-config", *USER_GRPO_COMMAND]
    ok = subprocess.run([*cmd, *readme_overrides("f-grpo")], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "focal: gamma=0.5 base=grpo" in ok.stdout
    bad = subprocess.run(
        [*cmd, "algorithm.adv_estimator=focal_grpo", "+algorithm.focal.base=ppo"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "algorithm.focal.base='ppo'" in bad.stderr
