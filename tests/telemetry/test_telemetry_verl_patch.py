"""The one patch of verl internals (fgrpo_verl/telemetry/verl_patch.py): fails loudly if verl moves."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from fgrpo_verl.telemetry import verl_patch
from fgrpo_verl.telemetry.trainer import FocalTelemetryTrainerMixin


def test_builtin_trainer_modes_are_hooked_after_a_plain_verl_import():
    import verl.trainer.ppo.v1 as v1

    for mode in verl_patch.BUILTIN_MODES:
        cls = v1.get_trainer_cls(mode)
        assert issubclass(cls, FocalTelemetryTrainerMixin), mode
        original = cls.__mro__[2]
        assert original.__module__.startswith("verl.trainer.ppo.v1."), original
        assert issubclass(cls, v1.PPOTrainer)


@pytest.mark.parametrize(("method", "params"), sorted(verl_patch.HOOKED_METHODS.items()))
def test_hooked_methods_keep_their_signature_in_verl(method, params):
    from verl.trainer.ppo.v1 import PPOTrainer

    assert hasattr(PPOTrainer, method), f"verl's PPOTrainer no longer has {method}: the telemetry hooks are dead"
    names = tuple(inspect.signature(getattr(PPOTrainer, method)).parameters)
    assert names == params, f"PPOTrainer.{method}{names} changed; update fgrpo_verl/telemetry/trainer.py"


def test_verl_still_calls_the_hooks_where_the_bridge_expects():
    """The call sites the hooks rely on, read from verl's source."""
    from verl.trainer.ppo.v1 import trainer_base

    step_once = inspect.getsource(trainer_base.PPOTrainer._step_once)
    assert "self._compute_advantage(batch, metrics=metrics)" in step_once
    next_batch = inspect.getsource(trainer_base.PPOTrainer._next_train_batch)
    assert "self._fetch_one_gen_batch()" in next_batch
    fetch = inspect.getsource(trainer_base.PPOTrainer._fetch_one_gen_batch)
    assert 'batch_dict["uid"]' in fetch, "verl assigns uids elsewhere now: prompt identities would be lost"
    fit = inspect.getsource(trainer_base.PPOTrainer.fit)
    assert fit.index("self.logger = Tracking(") < fit.index("self.on_train_begin()")
    assert "self.logger.log(data=metrics, step=self.global_steps)" in fit
    save = inspect.getsource(trainer_base.PPOTrainer._save_checkpoint)
    assert (
        'os.path.join(\n            self.config.trainer.default_local_dir, f"global_step_{self.global_steps}"' in save
    )
    assert isinstance(trainer_base.TRAINER_REGISTRY, dict)


def test_switch_leaves_verl_registry_untouched():
    code = (
        "import verl.trainer.ppo.v1 as v1\n"
        "from fgrpo_verl.telemetry.trainer import FocalTelemetryTrainerMixin\n"
        "print(issubclass(v1.get_trainer_cls('sync'), FocalTelemetryTrainerMixin))\n"
    )
    env = {"FGRPO_VERL_TRAINER_HOOKS": "0", "PATH": "/usr/bin:/bin"}
    import os

    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
