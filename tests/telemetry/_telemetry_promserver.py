"""Run Debian's real ``prometheus`` on loopback for a test: temp config and tsdb, bounded waits, always killed."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

START_TIMEOUT_S = 60.0


def require_binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not installed: these tests need the real Prometheus server; run "
            "scripts/install_system_deps.sh (apt-get install -y prometheus)"
        )
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path: str, **params: str) -> dict:
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())

    def query(self, expr: str) -> dict:
        return self.get("/api/v1/query", query=expr)

    def vector(self, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
        """Instant query -> {sorted labels (without __name__): value}."""
        data = self.query(expr)
        assert data["status"] == "success", data
        out = {}
        for item in data["data"]["result"]:
            labels = tuple(sorted((k, v) for k, v in item["metric"].items() if k != "__name__"))
            out[labels] = float(item["value"][1])
        return out

    def wait_for(self, expr: str, predicate, timeout: float = 40.0) -> dict:
        deadline = time.monotonic() + timeout
        last: dict = {}
        while time.monotonic() < deadline:
            try:
                last = self.vector(expr)
                if predicate(last):
                    return last
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"Prometheus never satisfied the condition on {expr!r}; last result {last}")


@contextlib.contextmanager
def running_prometheus(tmp: Path, scrape_config: dict, rule_files: list[str] | None = None) -> Iterator[Prometheus]:
    binary = require_binary("prometheus")
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [scrape_config],
    }
    if rule_files:
        config["rule_files"] = rule_files
    config_path = tmp / "prometheus.yml"
    config_path.write_text(json.dumps(config))  # JSON is valid YAML
    log = open(tmp / "prometheus.log", "w")  # noqa: SIM115 -- closed in finally
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config_path}",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            "--storage.tsdb.retention.time=1h",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        prom = Prometheus(port)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"prometheus exited: {(tmp / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{prom.base}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("prometheus did not become ready in time")
            time.sleep(0.3)
        yield prom
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()


def scrape_exporter(port: int) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """GET an exporter's /metrics on loopback: {sample name: {sorted labels: value}}."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, dict] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out
