"""Unbiased pass@k inside verl's real validation metrics path (verl 0.9.1, CPU).

Drives verl's own ``_val_metrics_update`` of the V1 trainer and of the legacy RayPPOTrainer with
the lists their ``_validate`` builds (only the GPU rollouts that produce those lists are absent).
The contract tests fail loudly if verl stops routing validation metrics through
``metric_utils.process_validation_metrics``.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fgrpo_verl.evaluation import verl_validation as vv
from fgrpo_verl.evaluation.passk import pass_at_k


def validation_lists(n: int = 8):
    """Two data sources; prompt j of 'aime' has j correct of n, 'math' prompts all have n - 1 correct."""
    data_sources, uids, acc, reward = [], [], [], []
    for source, correct in (("aime", [0, 1, 3]), ("math", [n - 1, n - 1])):
        for j, c in enumerate(correct):
            for i in range(n):
                data_sources.append(source)
                uids.append(f"{source}-uid-{j}")
                acc.append(i < c)
                reward.append(1.0 if i < c else 0.0)
    return data_sources, uids, {"reward": reward, "acc": acc}


@pytest.fixture(scope="module")
def trainers():
    import verl  # noqa: F401 -- loads the plugin through the verl.plugins entry point
    from verl.trainer.ppo import ray_trainer
    from verl.trainer.ppo.v1 import trainer_base

    assert vv.install_validation_passk()
    return trainer_base, ray_trainer


def test_contract_verl_routes_validation_metrics_through_process_validation_metrics(trainers):
    from verl.trainer.ppo import metric_utils

    params = list(inspect.signature(metric_utils.process_validation_metrics.__fgrpo_verl_original__).parameters)
    assert params[:3] == ["data_sources", "sample_uids", "infos_dict"], params
    assert "expected_acc_counts" in params, params
    for module, cls in ((trainers[0], "PPOTrainer"), (trainers[1], "RayPPOTrainer")):
        source = inspect.getsource(getattr(module, cls)._val_metrics_update)
        assert "process_validation_metrics(" in source, f"{module.__name__}.{cls} no longer calls it"
        assert getattr(module.process_validation_metrics, "__fgrpo_verl_passk__", False), module.__name__


def test_v1_trainer_logs_unbiased_pass_at_k(trainers):
    trainer_base = trainers[0]
    data_sources, uids, infos = validation_lists()
    expected_counts = {(ds, uid): 8 for ds, uid in zip(data_sources, uids, strict=True)}
    metrics = trainer_base.PPOTrainer._val_metrics_update(
        None, data_sources, uids, infos, [], expected_acc_counts=expected_counts
    )
    for k in (1, 2, 4, 8):
        expected = pass_at_k(8, np.array([0, 1, 3]), k).mean()
        assert metrics[f"val-aux/aime/acc/pass@{k}"] == pytest.approx(expected)
        assert metrics[f"val-aux/math/acc/pass@{k}"] == pytest.approx(pass_at_k(8, 7, k))
    # verl's own best@k (bootstrap with replacement) stays and is biased low against pass@k
    assert metrics["val-aux/aime/acc/best@4/mean"] < metrics["val-aux/aime/acc/pass@4"]
    assert "val-core/aime/acc/mean@8" in metrics and not any("reward/pass@" in key for key in metrics)


def test_missing_rollouts_count_as_wrong_like_verls_acc(trainers):
    trainer_base = trainers[0]
    data_sources, uids, infos = validation_lists()
    # drop two materialised samples of aime prompt 2 (3 correct of 8): they failed, expected count stays 8
    keep = [i for i, uid in enumerate(uids) if not (uid == "aime-uid-2" and i % 8 in (0, 7))]
    pick = lambda values: [values[i] for i in keep]  # noqa: E731
    expected_counts = {(ds, uid): 8 for ds, uid in zip(data_sources, uids, strict=True)}
    metrics = trainer_base.PPOTrainer._val_metrics_update(
        None,
        pick(data_sources),
        pick(uids),
        {k: pick(v) for k, v in infos.items()},
        [],
        expected_acc_counts=expected_counts,
    )
    assert metrics["val-aux/aime/acc/pass@1"] == pytest.approx((0 + 1 + 2) / 24)


def test_legacy_ray_trainer_path_and_listener(trainers):
    ray_trainer = trainers[1]
    seen = []

    def broken_listener(_):
        raise RuntimeError("exporter down")

    vv.add_validation_listener(broken_listener)
    vv.add_validation_listener(seen.append)
    try:
        data_sources, uids, infos = validation_lists(4)
        metrics = ray_trainer.RayPPOTrainer._val_metrics_update(None, data_sources, uids, infos, [])
    finally:
        vv.remove_validation_listener(broken_listener)
        vv.remove_validation_listener(seen.append)
    assert metrics["val-aux/math/acc/pass@4"] == 1.0
    assert seen and seen[0].pass_at_k["aime"][1] == pytest.approx((0 + 1 + 3) / 12)
    assert seen[0].problems == {"aime": 3, "math": 2} and seen[0].samples_per_problem["aime"] == 4


def test_sources_without_acc_and_bad_values_never_break_validation(trainers):
    trainer_base = trainers[0]
    data_sources, uids, infos = validation_lists(4)
    metrics = trainer_base.PPOTrainer._val_metrics_update(None, data_sources, uids, {"reward": infos["reward"]}, [])
    assert not any("pass@" in key for key in metrics) and "val-core/aime/reward/mean@4" in metrics
    computed = vv.validation_pass_at_k(["a", "a", "a"], ["u", "u", "v"], {"acc": [True, None, False]})
    assert computed.pass_at_k == {"a": {1: 0.5}}  # k limited by the smallest group (1 sample)


def test_switch_off(monkeypatch):
    monkeypatch.setenv(vv.ENV_SWITCH, "0")
    assert vv.install_validation_passk() is False


def test_import_verl_installs_it_before_the_trainers_bind_the_name():
    """Fresh interpreter: the plugin (verl.plugins entry point) must act inside ``import verl``."""
    code = textwrap.dedent(
        """
        import verl
        from verl.trainer.ppo.v1 import trainer_base
        print(getattr(trainer_base.process_validation_metrics, "__fgrpo_verl_passk__", False))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "True", done.stderr[-2000:]
