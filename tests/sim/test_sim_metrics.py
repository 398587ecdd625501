"""``simulate --metrics-port``: the simulation served through the telemetry exporter, scraped for real.

A tiny categorical setup (|A| = 1000, 50 correct) keeps every run to a second or two; the
endpoint is prometheus-client's HTTP server on a free loopback port, scraped over HTTP by
urllib and by Debian's real ``prometheus`` (the helpers of tests/telemetry).
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from fgrpo_verl.cli import main as cli_main
from fgrpo_verl.sim.metrics import SimulationMetrics, cell_label
from fgrpo_verl.sim.policy import CategoricalSetup
from fgrpo_verl.sim.sweep import SweepConfig, run_sweep

REPO = Path(__file__).resolve().parents[2]
TINY = ["--num-actions", "1000", "--num-correct", "50", "--no-plots", "--no-progress"]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


promserver = _load("_sim_promserver", REPO / "tests" / "telemetry" / "_telemetry_promserver.py")


scrape = promserver.scrape_exporter


def by_source(values: dict, **extra: str) -> dict[str, float]:
    return {dict(k)["data_source"]: v for k, v in values.items() if all(dict(k).get(a) == b for a, b in extra.items())}


class LineReader:
    """The child's stdout, line by line, with bounded waits (a thread does the blocking reads)."""

    def __init__(self, stream) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self.closed = False
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.lines.put(line)
        self.lines.put(None)

    def until(self, marker: str | None, timeout: float) -> str:
        """Everything read until a line containing ``marker`` (None: until the stream closes)."""
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:
                self.closed = True
                break
            self.seen.append(line)
            if marker is not None and marker in line:
                return "".join(self.seen)
        if marker is None and self.closed:
            return "".join(self.seen)
        raise AssertionError(f"no {marker!r} in the output: {''.join(self.seen)[-3000:]}")


def test_simulate_serves_its_figures_over_http_and_holds_the_endpoint(tmp_path: Path) -> None:
    port = promserver.free_port()
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fgrpo_verl.cli", "simulate", *TINY, "--group-sizes", "2,64", "--gammas", "0,1"]
    cmd += ["--seeds", "2", "--steps", "40", "--output-dir", str(out), "--metrics-port", str(port)]
    cmd += ["--metrics-addr", "127.0.0.1", "--metrics-hold", "300"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    log = tmp_path / "stderr.log"
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    reader = LineReader(proc.stdout)
    try:
        printed = reader.until("Holding http://127.0.0.1:", timeout=240)
        assert f"Serving the simulation's metrics at http://127.0.0.1:{port}/metrics" in printed
        got = scrape(port)  # the run is over, its figures are held
        summary = json.loads((out / "simulation.json").read_text())["summary"]
        assert len(summary) == 4
        q_pos = by_source(got["fgrpo_sim_correct_mass_ratio"])
        m_ret = by_source(got["fgrpo_sim_retained_positive_mass_ratio"])
        anchor = by_source(got["fgrpo_sim_anchor_probability_ratio"])
        for row in summary:
            name = cell_label(row["group_size"], row["gamma"])
            assert q_pos[name] == pytest.approx(row["q_pos_final"], rel=1e-6)
            assert m_ret[name] == pytest.approx(row["m_ret_final"], rel=1e-6)
            assert anchor[name] == pytest.approx(row["anchor_prob_final"], rel=1e-6)
            assert by_source(got["fgrpo_sim_cell_steps"])[name] == 40
            # one group of N draws per seed per update
            assert by_source(got["fgrpo_responses_total"])[name] == 2 * 40 * row["group_size"]
            assert (
                sum(
                    by_source(got["fgrpo_groups_total"], outcome=o)[name] for o in ("all_correct", "all_wrong", "mixed")
                )
                == 80
            )
            assert by_source(got["fgrpo_group_success_ratio_count"])[name] == 80
            assert by_source(got["fgrpo_tracked_prompts"])[name] == 2  # each seed's run is one prompt
            # the mean focal weight over the run, from the histogram's sum, is the table's "mean g"
            mean_g = by_source(got["fgrpo_focal_weight_ratio_sum"])[name] / 80
            assert mean_g == pytest.approx(row["mean_focal_weight"], rel=1e-5)
        assert set(q_pos) == {cell_label(n, g) for n in (2, 64) for g in (0.0, 1.0)}
        # N = 64 draws from Q_pos ~ 0.55: every group mixed; N = 2 has all-correct and all-wrong groups
        assert by_source(got["fgrpo_groups_total"], outcome="mixed")[cell_label(64, 0.0)] == 80
        assert by_source(got["fgrpo_groups_total"], outcome="all_wrong")[cell_label(2, 0.0)] > 0
        assert got["fgrpo_training_steps_total"][()] == 4 * 40
        assert got["fgrpo_global_step"][()] == 40
        assert got["fgrpo_focal_gamma"][()] == 1.0  # the last cell's
        assert got["fgrpo_telemetry_errors_total"][()] == 0
        proc.send_signal(signal.SIGINT)  # Ctrl-C ends the hold early and cleanly
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 0, log.read_text()[-3000:]
    assert "Stopped holding the metrics endpoint." in reader.until(None, timeout=30)
    with pytest.raises(OSError):
        scrape(port)  # closed at exit


def test_dashboard_queries_against_real_prometheus_scraping_the_simulation(tmp_path: Path) -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    metrics = SimulationMetrics(promserver.free_port(), "127.0.0.1", prompts=4)
    port = metrics.start()
    config = SweepConfig(group_sizes=(2, 64), gammas=(0.0, 1.0), seeds=(0,), steps=30, setup=CategoricalSetup(1000, 50))
    scrape_config = {"job_name": "fgrpo_sim", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
    try:
        with promserver.running_prometheus(tmp_path, scrape_config) as prom:
            prom.wait_for('up{job="fgrpo_sim"}', lambda v: v and all(x == 1.0 for x in v.values()))
            result = run_sweep(config, progress=False, on_record=metrics.observe)
            prom.wait_for("fgrpo_training_steps_total", lambda v: v and next(iter(v.values())) == 4 * 30)
            time.sleep(3)  # several scrapes of the final state, so rate() and increase() have two samples
            final_m_ret = by_source(prom.vector("fgrpo_sim_retained_positive_mass_ratio"))
            for row in result.summary_rows():
                assert final_m_ret[cell_label(row["group_size"], row["gamma"])] == pytest.approx(row["m_ret_final"])
            dashboard = json.loads((REPO / "scripts" / "monitoring" / "grafana_dashboard.json").read_text())
            exprs = _load("_sim_dashboard", REPO / "scripts" / "monitoring" / "generate_dashboard.py").expressions(
                dashboard
            )
            sim_panels = [e for e in exprs if "fgrpo_sim_" in e]
            assert sim_panels, "the dashboard has no simulation panel"
            end = time.time()
            checked = 0
            for expr in exprs:
                if "fgrpo_verl_metric" in expr or "fgrpo_validation_" in expr:
                    continue  # verl's scalars and validation rounds exist only in a training run
                if expr.startswith("label_values("):  # the dashboard's data_source variable
                    metric, label = expr[len("label_values(") : -1].split(", ")
                    values = prom.get(f"/api/v1/label/{label}/values", **{"match[]": metric})
                    assert sorted(values["data"]) == sorted(cell_label(n, g) for n in (2, 64) for g in (0.0, 1.0))
                    continue
                promql = expr.replace("$data_source", ".*").replace("$__rate_interval", "1m")
                answer = prom.get("/api/v1/query_range", query=promql, start=str(end - 20), end=str(end), step="1")
                assert answer["status"] == "success", (expr, answer)
                assert answer["data"]["result"], f"dashboard expression returned no series: {expr}"
                checked += 1
            assert checked >= 12
    finally:
        metrics.close()
        torch.set_num_threads(threads)


def test_a_publishing_failure_never_stops_the_simulation(caplog) -> None:
    metrics = SimulationMetrics(promserver.free_port(), "127.0.0.1", prompts=1)
    port = metrics.start()
    try:

        def broken(*args, **kwargs):
            raise RuntimeError("tracker exploded")

        metrics.tracker.update = broken
        config = SweepConfig(group_sizes=(8,), gammas=(1.0,), seeds=(0,), steps=5, setup=CategoricalSetup(1000, 50))
        with caplog.at_level("ERROR"):
            result = run_sweep(config, progress=False, on_record=metrics.observe)
        assert result.cells[0].q_pos.shape == (1, 6) and torch.isfinite(result.cells[0].m_ret).all()
        errors = [r for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1 and "tracker exploded" in caplog.text  # logged once, not every step
        got = scrape(port)
        assert got["fgrpo_telemetry_errors_total"][()] == 5  # every update's publication failed, counted
        assert by_source(got["fgrpo_sim_cell_steps"])[cell_label(8, 1.0)] == 0  # only the initial state got through
    finally:
        metrics.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metrics-port", "70000"], "--metrics-port must be a TCP port in [1, 65535], got 70000"),
        (["--metrics-port", "9464", "--metrics-addr", "localhost"], "--metrics-addr must be an IP address"),
        (["--metrics-port", "9464", "--metrics-hold", "-1"], "--metrics-hold must be a number of seconds >= 0"),
        (["--metrics-hold", "60"], "--metrics-hold needs --metrics-port"),
        (["--metrics-addr", "0.0.0.0"], "--metrics-addr needs --metrics-port"),
        (
            ["--metrics-port", "9464", "--group-sizes", "2..131072", "--gammas", ",".join(str(g) for g in range(16))],
            "this sweep has 272 cells, at most 255 are served",
        ),
    ],
)
def test_bad_metrics_arguments_stop_before_running(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    assert cli_main(["simulate", *TINY, *args, "--output-dir", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_an_address_that_cannot_be_bound_stops_before_running(tmp_path: Path, capsys) -> None:
    # 192.0.2.1 (TEST-NET-1, RFC 5737) is never an address of this machine
    args = ["--metrics-port", str(promserver.free_port()), "--metrics-addr", "192.0.2.1", "--output-dir", str(tmp_path)]
    assert cli_main(["simulate", *TINY, *args]) == 2
    assert "--metrics-port/--metrics-addr: cannot serve on 192.0.2.1" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_port_in_use_falls_back_to_a_free_port_named_in_the_output(tmp_path: Path, capsys, caplog) -> None:
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    taken = busy.getsockname()[1]
    try:
        args = ["--group-sizes", "8", "--gammas", "1", "--seeds", "1", "--steps", "3", "--output-dir", str(tmp_path)]
        with caplog.at_level("ERROR"):
            assert cli_main(["simulate", *TINY, *args, "--metrics-port", str(taken)]) == 0
    finally:
        busy.close()
    assert f"port {taken} on 127.0.0.1 is in use (--metrics-port)" in caplog.text
    printed = capsys.readouterr().out
    served = int(printed.split("Serving the simulation's metrics at http://127.0.0.1:")[1].split("/")[0])
    assert served != taken
    with pytest.raises(OSError):
        scrape(served)  # no --metrics-hold: closed when the command returns
