"""Installing the plugin leaves verl unchanged for runs that do not select ``focal_grpo``.

The plugin loads in every process that imports verl and hooks three places (README, "How the plugin
hooks into verl"). For a run with another estimator the only documented difference is the unbiased
``val-aux/<source>/acc/pass@k`` validation keys. These tests run verl's real code on CPU -- the V1
trainer from verl's registry, its config composition, ``validate_config`` and ``_val_metrics_update``
-- against verl's own unhooked class / function, with the stand-ins of ``_telemetry_trainer.py``
(TransferQueue's Ray actors and the GPU worker group) as the only substitutes.
"""

from __future__ import annotations

import os
import threading

import pytest
import torch
from _telemetry_trainer import MemoryKV, make_trainer, rollout_step

from fgrpo_verl.evaluation import verl_validation
from fgrpo_verl.settings import FocalConfigError
from fgrpo_verl.telemetry import hub as hub_module
from fgrpo_verl.telemetry.hub import STATE_FILE
from fgrpo_verl.telemetry.trainer import FocalTelemetryTrainerMixin

# indices 0..5 of the first batch: correct rollouts of N_ROLLOUTS=4 per prompt
STEP = {0: 0, 1: 1, 2: 2, 3: 4, 4: 3, 5: 0}


@pytest.fixture(autouse=True)
def fresh_hub():
    hub_module.reset_hub()
    yield
    hub_module.reset_hub()


def hooked_and_verls_trainer(mode: str = "sync") -> tuple[type, type]:
    """The class verl's registry hands out for ``mode`` (hooked) and verl's own class it extends."""
    from verl.trainer.ppo.v1 import get_trainer_cls

    hooked = get_trainer_cls(mode)
    verls = hooked.__bases__[1]
    assert issubclass(hooked, FocalTelemetryTrainerMixin) and hooked.__bases__[0] is FocalTelemetryTrainerMixin
    assert not issubclass(verls, FocalTelemetryTrainerMixin) and verls.__module__.startswith("verl.trainer.ppo.v1.")
    return hooked, verls


def run_one_step(cls: type, ckpt_dir: str, estimator: str, overrides: tuple[str, ...] = ()):
    kv = MemoryKV()
    trainer = make_trainer(ckpt_dir, kv, overrides=overrides, estimator=estimator, trainer_cls=cls)
    metrics = rollout_step(trainer, kv, STEP)
    rows = [row for (partition, _), row in kv.rows.items() if partition == "train"]
    return trainer, metrics, rows


def files_under(folder: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


@pytest.mark.parametrize(("mode", "estimator"), [("sync", "grpo"), ("sync", "rloo"), ("colocate_async", "grpo")])
def test_non_focal_step_matches_verls_unhooked_trainer(tmp_path, mode, estimator):
    hooked, verls = hooked_and_verls_trainer(mode)
    threads_before = {t.ident for t in threading.enumerate()}

    trainer, metrics, rows = run_one_step(hooked, str(tmp_path / "hooked"), estimator)
    _, verl_metrics, verl_rows = run_one_step(verls, str(tmp_path / "verl"), estimator)

    assert trainer._fgrpo_hub is None
    # verl adds no metrics here without use_kl_in_reward; a focal run's hook adds fgrpo/* keys at this point
    assert metrics == verl_metrics and not any(k.startswith("fgrpo/") for k in metrics)
    assert len(rows) == len(verl_rows) == 6 * 4
    for row, verl_row in zip(rows, verl_rows, strict=True):
        assert row.keys() == verl_row.keys()
        assert torch.equal(row["advantages"], verl_row["advantages"])
        assert torch.equal(row["returns"], verl_row["returns"])
    assert any(bool(row["advantages"].abs().sum()) for row in rows)  # the step did compute something
    # no telemetry state, no endpoint, no thread
    assert hub_module._HUB is None
    assert {t.ident for t in threading.enumerate()} == threads_before


def test_non_focal_checkpoint_and_resume_are_verls_own(tmp_path):
    hooked, verls = hooked_and_verls_trainer()
    for name, cls in (("hooked", hooked), ("verl", verls)):
        trainer, _, _ = run_one_step(cls, str(tmp_path / name), "grpo")
        trainer._save_checkpoint()
    written = files_under(str(tmp_path / "hooked"))
    assert "global_step_1/data.pt" in written and not any(STATE_FILE in f for f in written)
    assert written == files_under(str(tmp_path / "verl"))

    # resume through the hooked class: verl's own logic, no tracker restore, no hub
    resumed = make_trainer(str(tmp_path / "hooked"), MemoryKV(), resume_mode="auto", estimator="grpo")
    resumed._load_checkpoint()
    assert resumed.global_steps == 1
    assert hub_module._HUB is None


def test_non_focal_logger_is_verls_tracking(tmp_path):
    from verl.utils.tracking import Tracking

    hooked, _ = hooked_and_verls_trainer()
    trainer = make_trainer(str(tmp_path / "ckpt"), MemoryKV(), estimator="grpo", trainer_cls=hooked)
    tracking = Tracking(project_name="p", experiment_name="e", default_backend=["console"])
    trainer.logger = tracking
    trainer.on_train_begin()
    assert trainer.logger is tracking
    assert hub_module._HUB is None


def test_focal_with_metrics_disabled_adds_nothing(tmp_path):
    """``+algorithm.focal.metrics.enable=false``: no fgrpo/* keys, no tracker file, no endpoint, no files checked."""
    hooked, _ = hooked_and_verls_trainer()
    missing = str(tmp_path / "no-such-cert.pem")
    overrides = (
        "+algorithm.focal.metrics.enable=false",
        "+algorithm.focal.metrics.port=9",  # would be served if telemetry were on
        f"+algorithm.focal.metrics.certfile={missing}",  # files of a disabled endpoint are never opened
        f"+algorithm.focal.metrics.keyfile={missing}",
    )
    threads_before = {t.ident for t in threading.enumerate()}
    trainer, metrics, rows = run_one_step(hooked, str(tmp_path / "ckpt"), "focal_grpo", overrides)
    assert trainer._fgrpo_hub is None
    assert not any(k.startswith("fgrpo/") for k in metrics)  # with telemetry on, fgrpo/groups/* etc. are here
    assert any(bool(row["advantages"].abs().sum()) for row in rows)
    trainer._save_checkpoint()
    assert not any(STATE_FILE in f for f in files_under(str(tmp_path / "ckpt")))
    hub = hub_module._HUB  # the estimator's listener saw the step and stayed off
    assert hub is not None and not hub.options.enable and hub.exporter is None and hub.tracker.size == 0
    assert hub.drain_logger_metrics() == {}
    assert {t.ident for t in threading.enumerate()} == threads_before


def test_focal_with_metrics_disabled_after_an_enabled_run_in_the_same_process(tmp_path):
    hooked, _ = hooked_and_verls_trainer()
    hub_module.get_hub().configure({})  # an earlier focal_grpo run of this process had telemetry on
    trainer, metrics, _ = run_one_step(
        hooked, str(tmp_path / "ckpt"), "focal_grpo", ("+algorithm.focal.metrics.enable=false",)
    )
    hub = hub_module.get_hub()
    assert trainer._fgrpo_hub is None and not hub.options.enable
    assert hub.tracker.size == 0 and hub.last_stats is None and hub.drain_logger_metrics() == {}
    assert not any(k.startswith("fgrpo/") for k in metrics)


def validation_lists(n: int = 4):
    data_sources, uids, acc = [], [], []
    for j, correct in enumerate([0, 1, 3]):
        for i in range(n):
            data_sources.append("aime")
            uids.append(f"aime-{j}")
            acc.append(i < correct)
    return data_sources, uids, {"reward": [float(a) for a in acc], "acc": acc}


def test_validation_adds_only_pass_at_k_keys_and_no_telemetry(monkeypatch):
    import verl  # noqa: F401 -- loads the plugin
    from verl.trainer.ppo.v1 import trainer_base

    wrapped = trainer_base.process_validation_metrics
    assert getattr(wrapped, "__fgrpo_verl_passk__", False)
    data_sources, uids, infos = validation_lists()
    update = trainer_base.PPOTrainer._val_metrics_update
    ours = update(None, data_sources, uids, infos, [])
    monkeypatch.setattr(trainer_base, "process_validation_metrics", wrapped.__fgrpo_verl_original__)
    verls = update(None, data_sources, uids, infos, [])

    added = ours.keys() - verls.keys()
    assert added == {f"val-aux/aime/acc/pass@{k}" for k in (1, 2, 4)}
    assert verls.keys() <= ours.keys()
    for key, value in verls.items():  # verl's own values are untouched (bootstrap metrics use a fixed seed)
        assert ours[key] == value, key
    assert hub_module._HUB is None  # a non-focal run's validation creates no telemetry


def test_validation_before_the_hub_is_configured_is_recorded_on_configuration(tmp_path):
    """A focal run without trainer hooks configures its hub at the first estimator step, after val_before_train."""
    result = verl_validation.ValidationPassAtK({"aime": {1: 0.25}}, {"aime": 3}, {"aime": 4})
    hub_module.on_validation(result)
    assert hub_module._HUB is None
    hub = hub_module.get_hub()
    hub.configure({})
    assert hub.metrics_state.validation_rounds == 1
    hub_module.on_validation(result)
    assert hub.metrics_state.validation_rounds == 2

    # a focal run with trainer hooks starts after a non-focal run's validation: not its round
    hub_module.reset_hub()
    hub_module.on_validation(result)
    trainer = make_trainer(str(tmp_path / "ckpt"), MemoryKV(), trainer_cls=hooked_and_verls_trainer()[0])
    assert trainer._fgrpo_hub is not None and trainer._fgrpo_hub.metrics_state.validation_rounds == 0

    hub_module.reset_hub()
    hub_module.on_validation(result)
    off = hub_module.get_hub()
    off.configure({"enable": False})
    assert off.metrics_state.validation_rounds == 0


# --------------------------------------------------------------------------- start-up validation
GRPO = [
    "algorithm.adv_estimator=grpo",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.n=8",
    "data.train_batch_size=256",
    "actor_rollout_ref.actor.ppo_mini_batch_size=64",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
]


def outcome(validate, config) -> tuple[str, str] | None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy

    try:
        validate(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return None


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=4"],
        ["algorithm.adv_estimator=rloo"],
        ["actor_rollout_ref.actor.ppo_mini_batch_size=300"],  # verl rejects: larger than the batch
        ["actor_rollout_ref.actor.ppo_micro_batch_size=4"],  # verl rejects: both micro batch sizes set
        [  # unused, well-formed focal settings (files are checked only where an endpoint starts)
            "+algorithm.focal.gamma=2.0",
            "+algorithm.focal.metrics.certfile=/no/such.pem",
            "+algorithm.focal.metrics.keyfile=/no/such.key",
        ],
    ],
)
def test_validate_config_decides_as_verls_own_for_non_focal_configs(overrides):
    import verl.utils.config as verl_config_module

    from fgrpo_verl.verl_config import compose_verl_config

    wrapped = verl_config_module.validate_config
    assert getattr(wrapped, "__fgrpo_verl_wrapped__", False)
    config = compose_verl_config([*GRPO, *overrides])
    assert outcome(wrapped, config) == outcome(wrapped.__wrapped__, config)


def test_typo_under_algorithm_focal_is_rejected_even_when_unused():
    """``algorithm.focal`` belongs to the plugin: a typo there is an error whichever estimator runs.

    verl itself accepts it (it never reads the key); rejecting it keeps an A/B baseline's settings valid
    for the focal arm. This is the one way the start-up check can differ from verl's for a non-focal run.
    """
    import verl.utils.config as verl_config_module

    from fgrpo_verl.verl_config import compose_verl_config

    config = compose_verl_config([*GRPO, "+algorithm.focal.gama=2.0"])
    assert outcome(verl_config_module.validate_config.__wrapped__, config) is None
    with pytest.raises(FocalConfigError, match="gama"):
        verl_config_module.validate_config(config, use_reference_policy=False, use_critic=False)


def test_verl_plugins_switch_leaves_all_of_verl_untouched():
    """``VERL_USE_EXTERNAL_PLUGINS=none``: none of the three wraps, no estimator, no import hook."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import sys
        import verl
        import verl.utils.config as config
        from verl.trainer.ppo import core_algos
        from verl.trainer.ppo.v1 import get_trainer_cls, trainer_base
        print(
            "focal_grpo" in core_algos.ADV_ESTIMATOR_REGISTRY,
            hasattr(config.validate_config, "__wrapped__"),
            hasattr(trainer_base.process_validation_metrics, "__wrapped__"),
            any(c.__module__.startswith("fgrpo_verl") for m in ("sync", "colocate_async", "separate_async")
                for c in get_trainer_cls(m).__mro__),
            any(type(f).__module__.startswith("fgrpo_verl") for f in sys.meta_path),
            any(name.startswith("fgrpo_verl") for name in sys.modules),
        )
        """
    )
    env = dict(os.environ, VERL_USE_EXTERNAL_PLUGINS="none")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False"] * 6, done.stdout
