"""The bridge into verl: its real V1 trainer class, its real ``Tracking`` logger, its checkpoints.

Stand-ins (documented in ``_telemetry_trainer.py``) replace only TransferQueue's Ray actors and
the GPU worker group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _telemetry_trainer import MemoryKV, make_trainer, report, rollout_step

from fgrpo_verl.telemetry import hub as hub_module
from fgrpo_verl.telemetry.hub import STATE_FILE
from fgrpo_verl.telemetry.trainer import FocalTelemetryTrainerMixin, MirroringTracking

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

# indices 0..11; batches of 6 in dataloader order (no shuffle): step 1 -> 0..5, step 2 -> 6..11, step 3 -> 0..5
STEP_1 = {0: 0, 1: 1, 2: 2, 3: 4, 4: 3, 5: 0}
STEP_3 = {0: 0, 1: 0, 2: 2, 3: 4, 4: 0, 5: 0}  # 1 and 4 forgotten


@pytest.fixture(autouse=True)
def fresh_hub():
    hub_module.reset_hub()
    yield
    hub_module.reset_hub()


def test_step_metrics_reach_verl_tracking_file_logger(tmp_path, monkeypatch):
    from verl.utils.tracking import Tracking

    kv = MemoryKV()
    trainer = make_trainer(str(tmp_path / "ckpt"), kv)
    assert isinstance(trainer, FocalTelemetryTrainerMixin)
    metrics = rollout_step(trainer, kv, STEP_1)
    assert metrics["fgrpo/groups/total"] == 6
    assert metrics["fgrpo/groups/all_wrong"] == 2
    assert metrics["fgrpo/groups/all_correct"] == 1
    assert metrics["fgrpo/groups/mixed"] == 3
    assert metrics["fgrpo/gamma"] == 0.5
    assert metrics["fgrpo/success_rate/mean"] == pytest.approx((0 + 0.25 + 0.5 + 1 + 0.75 + 0) / 6)
    assert metrics["fgrpo/prompts/tracked"] == 6
    assert metrics["fgrpo/prompts/ever_solved"] == 4
    # two data sources in the batch (index 0 and 3 are gsm8k): per-source keys as well
    assert metrics["fgrpo/gsm8k/prompts/tracked"] == 2

    log_file = tmp_path / "verl_metrics.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(log_file))
    trainer.logger = Tracking(project_name="p", experiment_name="e", default_backend=["console", "file"])
    trainer.on_train_begin()
    assert isinstance(trainer.logger, MirroringTracking)
    metrics["critic/score/mean"] = 0.4
    trainer.logger.log(data=metrics, step=1)
    trainer.logger.finish()
    logged = json.loads(log_file.read_text().splitlines()[0])
    assert logged["step"] == 1
    assert logged["data"]["fgrpo/groups/mixed"] == 3
    assert logged["data"]["fgrpo/prompts/pass_at_8_proxy"] == pytest.approx(metrics["fgrpo/prompts/pass_at_8_proxy"])
    assert hub_module.get_hub().metrics_state.verl_scalars["critic/score/mean"] == 0.4


def test_stable_identity_across_steps_detects_forgetting(tmp_path):
    kv = MemoryKV()
    trainer = make_trainer(str(tmp_path / "ckpt"), kv)
    rollout_step(trainer, kv, STEP_1)
    rollout_step(trainer, kv, {})
    metrics = rollout_step(trainer, kv, STEP_3)  # same prompts as step 1 with fresh uids
    assert metrics["fgrpo/prompts/tracked"] == 12
    assert metrics["fgrpo/prompts/forgotten"] == 2
    hub = hub_module.get_hub()
    from fgrpo_verl.telemetry.identity import prompt_key

    assert hub.tracker.history(prompt_key("math", {"index": 1})) == [0.25, 0.0]


def test_tracker_saved_with_verl_checkpoint_and_restored_in_a_new_process(tmp_path):
    ckpt = tmp_path / "ckpt"
    kv = MemoryKV()
    trainer = make_trainer(str(ckpt), kv)
    rollout_step(trainer, kv, STEP_1)
    rollout_step(trainer, kv, {7: 2})
    trainer._save_checkpoint()  # verl's own method (stand-in worker group records the actor save)
    step_dir = ckpt / "global_step_2"
    assert (step_dir / STATE_FILE).exists()
    assert (step_dir / "data.pt").exists()  # verl's files beside ours
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text() == "2"
    expected = report(hub_module.get_hub())

    script = HERE / "_telemetry_restore.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, str(script), str(ckpt)], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    restored = json.loads(proc.stdout.strip().splitlines()[-1])
    assert restored["global_steps"] == 2
    assert restored["report"] == expected
    # and it keeps tracking from there: step 3 revisits prompts of step 1 in the restored process
    assert restored["after_step_3_forgotten"] == 2


def test_one_override_serves_per_prompt_metrics_from_the_trainer(tmp_path):
    """Only ``+algorithm.focal.metrics.port`` (and a loopback address for the test) is added."""
    import urllib.request

    from _telemetry_promserver import free_port

    port = free_port()
    kv = MemoryKV()
    trainer = make_trainer(
        str(tmp_path / "ckpt"),
        kv,
        overrides=(f"+algorithm.focal.metrics.port={port}", "+algorithm.focal.metrics.addr=127.0.0.1"),
    )
    rollout_step(trainer, kv, STEP_1)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        body = resp.read().decode()
    assert 'fgrpo_tracked_prompts{data_source="math"} 4.0' in body
    assert 'fgrpo_tracked_prompts{data_source="gsm8k"} 2.0' in body
    assert 'fgrpo_groups_total{data_source="gsm8k",outcome="all_wrong"} 1.0' in body
    assert "fgrpo_global_step 1.0" in body


def test_fit_ending_closes_the_endpoint_and_removes_the_file_sd_target(tmp_path):
    from _telemetry_promserver import free_port

    sd = tmp_path / "fgrpo.json"
    trainer = make_trainer(
        str(tmp_path / "ckpt"),
        MemoryKV(),
        overrides=(
            f"+algorithm.focal.metrics.port={free_port()}",
            "+algorithm.focal.metrics.addr=127.0.0.1",
            f"+algorithm.focal.metrics.file_sd={sd}",
        ),
    )
    assert sd.exists()
    # verl's own fit stops early here (no rollout servers or validation data on CPU); it must still clean up
    with pytest.raises(Exception):  # noqa: B017 -- whatever verl raises without GPUs
        trainer.fit(None)
    assert hub_module.get_hub().exporter is None
    assert not sd.exists()
