"""The verl.plugins entry point in fresh processes and Ray workers, and loud, explained failures."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, timeout=300
    )


def test_plain_import_verl_registers_focal_grpo():
    proc = run_python(
        """
        import verl
        from verl.trainer.ppo.core_algos import get_adv_estimator_fn
        fn = get_adv_estimator_fn("focal_grpo")
        print(fn.__module__ + "." + fn.__name__)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "fgrpo_verl.estimator.compute_focal_advantage"


def test_ray_worker_finds_focal_grpo():
    proc = run_python(
        """
        import ray
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)

        @ray.remote
        def lookup():
            import verl
            from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY
            fn = ADV_ESTIMATOR_REGISTRY.get("focal_grpo")
            return None if fn is None else fn.__module__

        print(ray.get(lookup.remote()))
        ray.shutdown()
        """
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "fgrpo_verl.estimator"


FAILURE_PRELUDE = """
    import logging, sys
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    import verl  # plugins disabled via VERL_USE_EXTERNAL_PLUGINS=none: we load by hand below
    from verl.trainer.ppo import core_algos
"""

CHECK_STAND_IN = """
    from fgrpo_verl import plugin
    assert plugin.LOAD_ERROR, "LOAD_ERROR must be set"
    try:
        core_algos.get_adv_estimator_fn("focal_grpo")(None, None)
    except plugin.PluginLoadError as exc:
        print("STAND-IN:", exc)
"""


def test_verl_version_out_of_range_explains_itself():
    proc = run_python(
        FAILURE_PRELUDE
        + """
    import importlib.metadata as md
    real = md.version
    md.version = lambda name: "0.10.2" if name == "verl" else real(name)
    """
        + CHECK_STAND_IN,
        VERL_USE_EXTERNAL_PLUGINS="none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fgrpo-verl is NOT active" in proc.stderr and "verl 0.10.2 is installed" in proc.stderr
    assert "STAND-IN:" in proc.stdout and ">=0.9.1,<0.10.0" in proc.stdout


def test_import_error_explains_itself():
    proc = run_python(
        FAILURE_PRELUDE
        + """
    sys.modules["fgrpo_verl.estimator"] = None  # any import of it now raises ImportError
    """
        + CHECK_STAND_IN,
        VERL_USE_EXTERNAL_PLUGINS="none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fgrpo-verl is NOT active" in proc.stderr and "failed to import its verl glue" in proc.stderr
    assert "STAND-IN:" in proc.stdout and "reinstall" in proc.stdout


def test_name_taken_by_another_function_explains_itself():
    proc = run_python(
        FAILURE_PRELUDE
        + """
    @core_algos.register_adv_est("focal_grpo")
    def someone_elses_estimator(**kwargs):
        return None

    from fgrpo_verl import plugin
    from fgrpo_verl.startup_check import validate_focal_config
    from omegaconf import OmegaConf
    assert core_algos.get_adv_estimator_fn("focal_grpo") is someone_elses_estimator  # not overwritten
    try:
        validate_focal_config(OmegaConf.create({"algorithm": {"adv_estimator": "focal_grpo"}}))
    except plugin.PluginLoadError as exc:
        print("STARTUP:", exc)
    """,
        VERL_USE_EXTERNAL_PLUGINS="none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "already taken by __main__.someone_elses_estimator" in proc.stderr
    assert "STARTUP:" in proc.stdout and "VERL_USE_EXTERNAL_PLUGINS" in proc.stdout


@pytest.mark.parametrize("version,ok", [("0.9.1", True), ("0.9.7.post1", True), ("0.9.0", False), ("0.10.0", False)])
def test_version_window(version, ok):
    from fgrpo_verl.plugin import PluginLoadError, check_verl_version

    if ok:
        check_verl_version(version)
    else:
        with pytest.raises(PluginLoadError, match="supports verl"):
            check_verl_version(version)
