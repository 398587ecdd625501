"""The exporter scraped by a real Prometheus server; the dashboard's PromQL evaluated against it."""

from __future__ import annotations

import importlib.util
import json
import socket
import time
import urllib.request
from pathlib import Path

import pytest
from _telemetry_batches import algorithm_config, run_step
from _telemetry_promserver import free_port, require_binary, running_prometheus

from fgrpo_verl.telemetry import hub as hub_module

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "scripts" / "monitoring"

STEP_1 = [("math", 0, 0), ("math", 1, 1), ("math", 2, 2), ("math", 3, 4), ("code", 10, 4), ("code", 11, 3)]
STEP_2 = [("math", 0, 0), ("math", 1, 0), ("math", 2, 2), ("math", 3, 4), ("code", 10, 4), ("code", 11, 3)]


def _dashboard_module():
    spec = importlib.util.spec_from_file_location("generate_dashboard", MONITORING / "generate_dashboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return resp.read().decode()


@pytest.fixture
def fresh_hub():
    hub_module.reset_hub()
    yield hub_module.get_hub()
    hub_module.reset_hub()


def test_prometheus_scrapes_known_batches_and_evaluates_dashboard(tmp_path, fresh_hub):
    sd_file = tmp_path / "fgrpo_targets.json"
    port = free_port()
    algorithm = algorithm_config(gamma=0.5, port=port, addr="127.0.0.1", file_sd=str(sd_file))
    hub = fresh_hub
    hub.configure(algorithm.focal.metrics)
    assert hub.exporter is not None and hub.exporter.port == port
    target = json.loads(sd_file.read_text())
    assert target == [{"targets": [f"127.0.0.1:{port}"], "labels": {"job": "fgrpo", "__scheme__": "http"}}]

    scrape = {
        "job_name": "fgrpo",
        "scrape_interval": "1s",
        "file_sd_configs": [{"files": [str(sd_file)], "refresh_interval": "1s"}],
    }
    with running_prometheus(tmp_path, scrape) as prom:
        prom.wait_for('up{job="fgrpo"}', lambda v: v and all(x == 1.0 for x in v.values()))
        run_step(algorithm, STEP_1, hub)
        prom.wait_for("fgrpo_training_steps_total", lambda v: v and next(iter(v.values())) == 1.0)
        time.sleep(2.5)  # a few scrapes of step 1, so increase() over the dashboard windows sees a change
        run_step(algorithm, STEP_2, hub)
        prom.wait_for("fgrpo_training_steps_total", lambda v: v and next(iter(v.values())) == 2.0)
        # verl's logger dict as the Tracking wrapper hands it over (see the trainer bridge test)
        verl_scalars = {
            "critic/score/mean": 0.4,
            "actor/entropy": 0.7,
            "response_length/mean": 812.0,
            "prompt_length/mean": 120.0,
            "timing_s/step": 95.0,
            "fgrpo/groups/mixed": 3.0,  # not mirrored: only the fixed list of verl scalars is
        }
        hub.observe_verl_metrics(verl_scalars, 2)
        # a validation round through verl's real metrics path (the plugin's listener feeds the hub)
        val_metrics = _validation_round()
        prom.wait_for("fgrpo_validation_rounds_total", lambda v: v and next(iter(v.values())) == 1.0)

        base = (("instance", f"127.0.0.1:{port}"), ("job", "fgrpo"))

        def labelled(**labels):
            return tuple(sorted(base + tuple(labels.items())))

        groups = prom.vector("fgrpo_groups_total")
        assert groups[labelled(data_source="math", outcome="all_wrong")] == 3  # step 1: 1, step 2: 2
        assert groups[labelled(data_source="math", outcome="mixed")] == 3
        assert groups[labelled(data_source="math", outcome="all_correct")] == 2
        assert groups[labelled(data_source="code", outcome="all_correct")] == 2
        assert groups[labelled(data_source="code", outcome="mixed")] == 2
        forgotten = prom.vector("fgrpo_prompts_forgotten")
        assert forgotten[labelled(data_source="math")] == 1  # index 1: solved at step 1, 0/4 at step 2
        assert forgotten[labelled(data_source="code")] == 0
        assert prom.vector("fgrpo_prompts_forgotten_events_total")[labelled(data_source="math")] == 1
        assert prom.vector("fgrpo_prompts_ever_solved")[labelled(data_source="math")] == 3
        assert prom.vector("fgrpo_tracked_prompts")[labelled(data_source="math")] == 4
        passk = prom.vector("fgrpo_pass_at_k_proxy_ratio")
        assert passk[labelled(data_source="math", k="1")] == pytest.approx((0 + 0 + 0.5 + 1) / 4)
        assert passk[labelled(data_source="math", k="8")] == pytest.approx((0 + 0 + (1 - 0.5**8) + 1) / 4)
        assert passk[labelled(data_source="code", k="1")] == pytest.approx((1 + 0.75) / 2)
        assert prom.vector("fgrpo_batch_pass_at_1_ratio")[labelled(data_source="math")] == pytest.approx(6 / 16)
        assert prom.vector("fgrpo_focal_gamma")[base] == 0.5
        hist = prom.vector("fgrpo_group_success_ratio_bucket")
        assert hist[labelled(data_source="math", le="0.0")] == 3
        assert hist[labelled(data_source="math", le="+Inf")] == 8
        assert hist[labelled(data_source="math", le="0.5")] == 6  # rates 0,0,0, 0.25, 0.5, 0.5
        assert prom.vector("fgrpo_group_success_ratio_count")[labelled(data_source="math")] == 8
        # focal weights of step 2's code groups: mu = 1 -> 0, mu = 0.75 -> 0.25 ** 0.5 = 0.5
        assert prom.vector("fgrpo_focal_weight_mean_ratio")[labelled(data_source="code")] == pytest.approx(0.25)
        assert prom.vector("fgrpo_global_step")[base] == 2
        val = prom.vector("fgrpo_validation_pass_at_k_ratio")
        assert {dict(key)["k"] for key in val} == {"1", "2", "4"}
        for key, value in val.items():
            labels = dict(key)
            assert value == pytest.approx(val_metrics[f"val-aux/{labels['data_source']}/acc/pass@{labels['k']}"])
        assert val[labelled(data_source="aime", k="1")] == pytest.approx((0 + 1 + 3) / 12)
        assert prom.vector("fgrpo_validation_samples_per_problem")[labelled(data_source="aime")] == 4

        time.sleep(3)  # several scrapes after the last step
        dashboard = json.loads((MONITORING / "grafana_dashboard.json").read_text())
        exprs = _dashboard_module().expressions(dashboard)
        assert len(exprs) >= 15
        end = time.time()
        for expr in exprs:
            if expr.startswith("label_values("):  # Grafana's variable function, not PromQL
                metric, label = expr[len("label_values(") : -1].split(", ")
                values = prom.get(f"/api/v1/label/{label}/values", **{"match[]": metric})
                assert sorted(values["data"]) == ["code", "math"], expr
                continue
            if "fgrpo_sim_" in expr:  # fed by `fgrpo-verl simulate`: evaluated in tests/sim/test_sim_metrics.py
                continue
            promql = expr.replace("$data_source", ".*").replace("$__rate_interval", "1m")
            result = prom.get("/api/v1/query_range", query=promql, start=str(end - 20), end=str(end), step="1")
            assert result["status"] == "success", (expr, result)
            assert result["data"]["result"], f"dashboard expression returned no series: {expr}"
        mirrored = prom.vector("fgrpo_verl_metric")
        assert {dict(k)["name"]: v for k, v in mirrored.items()} == {
            k: v for k, v in verl_scalars.items() if not k.startswith("fgrpo/")
        }


def _validation_round() -> dict:
    """verl's V1 trainer turns 4 samples per prompt into validation metrics (aime: 0, 1, 3 correct; math: 4, 4)."""
    from verl.trainer.ppo.v1 import trainer_base

    data_sources, uids, acc = [], [], []
    for source, correct in (("aime", [0, 1, 3]), ("math", [4, 4])):
        for j, c in enumerate(correct):
            for i in range(4):
                data_sources.append(source)
                uids.append(f"{source}-{j}")
                acc.append(i < c)
    infos = {"reward": [float(a) for a in acc], "acc": acc}
    return trainer_base.PPOTrainer._val_metrics_update(None, data_sources, uids, infos, [])


def test_committed_dashboard_is_generated_from_code():
    module = _dashboard_module()
    assert (MONITORING / "grafana_dashboard.json").read_text() == module.render(), (
        "grafana_dashboard.json is stale: run python scripts/monitoring/generate_dashboard.py"
    )
    titles = [p["title"] for p in json.loads(module.render())["panels"] if p["type"] != "row"]
    assert "Batch pass@1 vs training-set pass@k proxy" in titles and "Group outcome mix" in titles


def test_metrics_size_does_not_grow_with_prompts(fresh_hub):
    port = free_port()
    algorithm = algorithm_config(port=port, addr="127.0.0.1")
    hub = fresh_hub
    hub.configure(algorithm.focal.metrics)
    run_step(algorithm, [("math", i, i % 5) for i in range(8)], hub)
    small = _scrape(port)
    for step in range(5):
        run_step(algorithm, [("math", 1000 * (step + 1) + i, i % 5) for i in range(400)], hub)
    large = _scrape(port)
    assert hub.tracker.size == 2008
    assert "prompt" not in {label for line in large.splitlines() if "{" in line for label in _labels(line)}
    assert abs(len(large) - len(small)) < 200  # only numbers change width
    assert large.count("\n") == small.count("\n")


def _labels(line: str) -> list[str]:
    inner = line[line.index("{") + 1 : line.index("}")]
    return [part.split("=")[0] for part in inner.split(",") if "=" in part]


def test_port_in_use_falls_back_to_a_free_port_and_file_sd_follows(tmp_path, fresh_hub, caplog):
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    taken = busy.getsockname()[1]
    try:
        sd = tmp_path / "sd.json"
        hub = fresh_hub
        with caplog.at_level("ERROR"):
            hub.configure({"port": taken, "addr": "127.0.0.1", "file_sd": str(sd)})
        assert hub.exporter is not None and hub.exporter.port != taken
        assert f"port {taken} on 127.0.0.1 is in use (algorithm.focal.metrics.port)" in caplog.text
        assert json.loads(sd.read_text())[0]["targets"] == [f"127.0.0.1:{hub.exporter.port}"]
        assert "fgrpo_training_steps_total 0.0" in _scrape(hub.exporter.port)
        hub.close()
        assert not sd.exists()  # a finished run removes its target
    finally:
        busy.close()


def test_exporter_failure_never_stops_the_estimator(fresh_hub, caplog):
    hub = fresh_hub
    algorithm = algorithm_config(port=free_port(), addr="127.0.0.1")
    hub.configure(algorithm.focal.metrics)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    hub.metrics_state.observe_step = broken
    with caplog.at_level("ERROR"):
        out = run_step(algorithm, [("math", 0, 2)], hub)
    assert "step listener" in caplog.text and "disk full" in caplog.text
    assert out.batch["advantages"].abs().sum() > 0  # training data intact
    assert "fgrpo_telemetry_errors_total 1.0" in _scrape(hub.exporter.port)


def test_tls_endpoint_with_client_certificates(tmp_path, fresh_hub):
    """prometheus-client's own TLS options: server certificate plus required client certificates."""
    import ssl
    import subprocess

    openssl = require_binary("openssl")

    def cert(name: str) -> tuple[Path, Path]:
        key, crt = tmp_path / f"{name}.key", tmp_path / f"{name}.crt"
        subprocess.run(
            [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(crt)],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        return key, crt

    server_key, server_crt = cert("server")
    client_key, client_crt = cert("client")
    port = free_port()
    hub = fresh_hub
    hub.configure(
        {
            "port": port,
            "addr": "127.0.0.1",
            "certfile": str(server_crt),
            "keyfile": str(server_key),
            "client_cafile": str(client_crt),
            "client_auth_required": True,
        }
    )
    assert hub.exporter is not None
    ctx = ssl.create_default_context(cafile=str(server_crt))
    ctx.load_cert_chain(str(client_crt), str(client_key))
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=ctx, timeout=10) as resp:
        assert "fgrpo_training_steps_total" in resp.read().decode()
    no_client_cert = ssl.create_default_context(cafile=str(server_crt))
    with pytest.raises(OSError):
        urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=no_client_cert, timeout=10)
    with pytest.raises(OSError):  # plain HTTP is refused too
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10)


def test_without_trainer_hooks_step_metrics_still_flow(fresh_hub, caplog):
    """No prompt identities (e.g. the legacy trainer): step statistics and the endpoint work, tracking is off."""
    port = free_port()
    algorithm = algorithm_config(port=port, addr="127.0.0.1")
    with caplog.at_level("WARNING"):
        run_step(algorithm, [("math", 0, 1), ("math", 1, 4)], hub=None)  # the endpoint starts lazily here
    assert "no stable prompt identity" in caplog.text
    body = _scrape(port)
    assert 'fgrpo_groups_total{data_source="unknown",outcome="mixed"} 1.0' in body
    assert 'fgrpo_groups_total{data_source="unknown",outcome="all_correct"} 1.0' in body
    assert "fgrpo_tracked_prompts{" not in body
    assert fresh_hub.drain_logger_metrics()["fgrpo/groups/total"] == 2
