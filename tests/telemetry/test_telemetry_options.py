"""``algorithm.focal.metrics.*``: accepted by verl's config composition, bad values fail at start-up."""

from __future__ import annotations

import pytest

from fgrpo_verl.settings import FocalConfigError, parse_settings
from fgrpo_verl.telemetry.options import TelemetryConfigError, parse_options


def test_one_override_turns_the_endpoint_on_through_verls_own_config():
    from fgrpo_verl.startup_check import validate_focal_config
    from fgrpo_verl.verl_config import compose_verl_config, validate_verl_config

    cfg = compose_verl_config(
        [
            "algorithm.adv_estimator=focal_grpo",
            "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
            "+algorithm.focal.metrics.port=9464",
        ]
    )
    validate_verl_config(cfg)
    settings = validate_focal_config(cfg)
    options = parse_options(settings.metrics)
    assert options.endpoint_enabled and options.port == 9464 and options.addr == "0.0.0.0"


def test_defaults_keep_the_endpoint_off_but_telemetry_on():
    options = parse_options(None)
    assert options.enable and not options.endpoint_enabled
    assert options.tracker_capacity == 1_000_000


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"port": 70000}, "algorithm.focal.metrics.port=70000 is out of range"),
        ({"port": "http"}, "algorithm.focal.metrics.port='http' is not an integer"),
        ({"prot": 9464}, "unknown telemetry option algorithm.focal.metrics.prot"),
        ({"port": 9464, "addr": "localhost"}, "algorithm.focal.metrics.addr='localhost' is not an IP address"),
        ({"basic_auth": {"user": "a"}}, "basic auth is not offered by prometheus-client"),
        ({"tracker_capacity": 0}, "algorithm.focal.metrics.tracker_capacity=0 is out of range"),
        ({"enable": "maybe"}, "algorithm.focal.metrics.enable='maybe' is not a boolean"),
    ],
)
def test_bad_options_name_the_key(metrics, message):
    with pytest.raises(TelemetryConfigError) as err:
        parse_options(metrics)
    assert message in str(err.value)
    with pytest.raises(FocalConfigError) as err2:  # and through the plugin's settings (start-up check)
        parse_settings({"metrics": metrics})
    assert message in str(err2.value)


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"port": 9464, "certfile": "/nonexistent.pem", "keyfile": "/x"}, "algorithm.focal.metrics.certfile"),
        ({"file_sd": "/nonexistent-dir/x.json", "port": 1}, "algorithm.focal.metrics.file_sd"),
    ],
)
def test_missing_files_fail_where_the_endpoint_starts_not_in_the_estimator(metrics, message):
    with pytest.raises(TelemetryConfigError) as err:
        parse_options(metrics)
    assert message in str(err.value)
    # The estimator re-reads its settings every step: a file vanishing mid-run must not stop training.
    assert parse_settings({"metrics": metrics}).metrics == metrics


def test_missing_file_fails_when_verls_trainer_is_built(tmp_path):
    from _telemetry_trainer import MemoryKV, make_trainer

    with pytest.raises(TelemetryConfigError, match=r"algorithm\.focal\.metrics\.certfile='/nonexistent\.pem'"):
        make_trainer(
            str(tmp_path),
            MemoryKV(),
            overrides=(
                "+algorithm.focal.metrics.port=9464",
                "+algorithm.focal.metrics.certfile=/nonexistent.pem",
                "+algorithm.focal.metrics.keyfile=/nonexistent.key",
            ),
        )


def test_file_sd_without_port_is_rejected(tmp_path):
    with pytest.raises(TelemetryConfigError, match=r"file_sd is set but algorithm\.focal\.metrics\.port is not"):
        parse_options({"file_sd": str(tmp_path / "sd.json")})


def test_tls_needs_both_files(tmp_path):
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    with pytest.raises(TelemetryConfigError, match="TLS needs both"):
        parse_options({"port": 9464, "certfile": str(cert)})
