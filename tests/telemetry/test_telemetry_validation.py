"""Unbiased validation pass@k from verl's real validation metrics path onto the real endpoint, over HTTP."""

from __future__ import annotations

import math
from itertools import combinations

import pytest
from _telemetry_promserver import free_port
from _telemetry_promserver import scrape_exporter as scrape

from fgrpo_verl.evaluation import verl_validation
from fgrpo_verl.telemetry import hub as hub_module

N = 8
CORRECT = {"aime": [0, 1, 3, 8], "gsm8k": [7, 5]}  # correct samples per prompt, N samples each


def brute_force_pass_at_k(n: int, c: int, k: int) -> float:
    """Share of k-subsets of n samples (c correct) that contain a correct one."""
    subsets = list(combinations(range(n), k))
    return sum(any(i < c for i in s) for s in subsets) / len(subsets)


def verl_validation_round() -> dict:
    """verl's V1 trainer's own ``_val_metrics_update`` on the lists its ``_validate`` builds (no GPU rollouts)."""
    import verl  # noqa: F401 -- loads the plugin (wraps process_validation_metrics, registers the hub listener)
    from verl.trainer.ppo.v1 import trainer_base

    data_sources, uids, acc = [], [], []
    for source, correct in CORRECT.items():
        for j, c in enumerate(correct):
            for i in range(N):
                data_sources.append(source)
                uids.append(f"{source}-{j}")
                acc.append(i < c)
    infos = {"reward": [float(a) for a in acc], "acc": acc}
    expected = {(ds, uid): N for ds, uid in zip(data_sources, uids, strict=True)}
    update = trainer_base.PPOTrainer._val_metrics_update
    return update(None, data_sources, uids, infos, [], expected_acc_counts=expected)


@pytest.fixture
def served_hub():
    hub_module.reset_hub()
    hub = hub_module.get_hub()
    port = free_port()
    hub.configure({"port": port, "addr": "127.0.0.1"})
    assert hub.exporter is not None
    yield hub, port
    hub_module.reset_hub()


def test_validation_pass_at_k_reaches_the_endpoint(served_hub):
    _, port = served_hub
    before = scrape(port)
    assert before["fgrpo_validation_rounds_total"][()] == 0
    assert "fgrpo_validation_pass_at_k_ratio" not in before  # no series before the first round
    metrics = verl_validation_round()
    assert hub_module.on_validation in verl_validation._listeners  # registered by the plugin in `import verl`
    got = scrape(port)
    passk = got["fgrpo_validation_pass_at_k_ratio"]
    assert {dict(key)["k"] for key in passk} == {"1", "2", "4", "8"}
    for source, correct in CORRECT.items():
        for k in (1, 2, 4, 8):
            expected = sum(brute_force_pass_at_k(N, c, k) for c in correct) / len(correct)
            value = passk[(("data_source", source), ("k", str(k)))]
            assert value == pytest.approx(expected, abs=1e-12)
            assert value == pytest.approx(metrics[f"val-aux/{source}/acc/pass@{k}"])  # the same numbers verl logs
        assert got["fgrpo_validation_problems"][(("data_source", source),)] == len(correct)
        assert got["fgrpo_validation_samples_per_problem"][(("data_source", source),)] == N
    assert got["fgrpo_validation_rounds_total"][()] == 1
    assert not math.isnan(got["fgrpo_last_validation_timestamp_seconds"][()])
    assert got["fgrpo_telemetry_errors_total"][()] == 0
    verl_validation_round()
    assert scrape(port)["fgrpo_validation_rounds_total"][()] == 2


def test_exporter_failure_never_breaks_validation(served_hub, caplog):
    hub, port = served_hub

    def broken(*args, **kwargs):
        raise RuntimeError("exporter state corrupted")

    hub.metrics_state.set_validation = broken
    with caplog.at_level("ERROR"):
        metrics = verl_validation_round()
    assert "exporter state corrupted" in caplog.text and "training continues" in caplog.text
    assert metrics["val-aux/aime/acc/pass@1"] == pytest.approx((0 + 1 + 3 + 8) / 32)  # verl's result intact
    assert "val-core/aime/acc/mean@8" in metrics
    got = scrape(port)
    assert got["fgrpo_telemetry_errors_total"][()] == 1
    assert "fgrpo_validation_pass_at_k_ratio" not in got


def test_telemetry_switched_off_ignores_validation():
    hub = hub_module.TelemetryHub()
    hub.configure({"enable": False})
    hub.on_validation(verl_validation.ValidationPassAtK({"aime": {1: 0.5}}, {"aime": 2}, {"aime": 1}))
    assert hub.metrics_state.validation_rounds == 0 and not hub.metrics_state.validation_pass_at_k
