"""``algorithm.focal.metrics.*``: the telemetry options, validated at start-up.

Nothing here imports prometheus-client or verl, so :mod:`fgrpo_verl.settings` can validate
these keys inside verl's own start-up check before any worker starts.  Every error names
the key (``algorithm.focal.metrics.<name>``) and the fix.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Any

PREFIX = "algorithm.focal.metrics"
DEFAULT_ADDR = "0.0.0.0"
DEFAULT_CAPACITY = 1_000_000
DEFAULT_HISTORY = 8
MAX_HISTORY = 64
DEFAULT_JOB = "fgrpo"


class TelemetryConfigError(ValueError):
    """An ``algorithm.focal.metrics.*`` option is invalid."""


@dataclass(frozen=True)
class TelemetryOptions:
    """Validated telemetry options.

    Attributes:
        enable: compute per-step statistics and track prompts (default on; ``false`` turns all telemetry off).
        port: TCP port of the Prometheus endpoint; ``None`` = no endpoint (verl's logger still gets ``fgrpo/*``).
        addr: bind address of the endpoint.
        file_sd: path of a Prometheus file_sd JSON file to write the endpoint's target into.
        job: ``job`` label written into the file_sd target.
        certfile, keyfile: serve ``/metrics`` over TLS (prometheus-client's own TLS options).
        client_cafile, client_capath, client_auth_required: mutual TLS (client certificates).
        tracker_capacity: most prompts tracked at once; the least recently seen are evicted beyond it.
        history: success rates kept per prompt (most recent first out).
    """

    enable: bool = True
    port: int | None = None
    addr: str = DEFAULT_ADDR
    file_sd: str | None = None
    job: str = DEFAULT_JOB
    certfile: str | None = None
    keyfile: str | None = None
    client_cafile: str | None = None
    client_capath: str | None = None
    client_auth_required: bool = False
    tracker_capacity: int = DEFAULT_CAPACITY
    history: int = DEFAULT_HISTORY

    @property
    def endpoint_enabled(self) -> bool:
        return self.enable and self.port is not None

    @property
    def tls(self) -> bool:
        return self.certfile is not None


KNOWN_KEYS = (
    "enable",
    "port",
    "addr",
    "file_sd",
    "job",
    "certfile",
    "keyfile",
    "client_cafile",
    "client_capath",
    "client_auth_required",
    "tracker_capacity",
    "history",
)
_BASIC_AUTH_KEYS = ("basic_auth", "username", "password", "basic_auth_user", "basic_auth_password")


def _key(name: str) -> str:
    return f"{PREFIX}.{name}"


def _as_bool(raw: Any, name: str) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("true", "false", "1", "0", "yes", "no"):
        return raw.lower() in ("true", "1", "yes")
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    raise TelemetryConfigError(f"{_key(name)}={raw!r} is not a boolean; use true or false")


def _as_int(raw: Any, name: str, low: int, high: int, fix: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise TelemetryConfigError(f"{_key(name)}={raw!r} is not an integer; {fix}")
    try:
        value = int(raw)
    except ValueError:
        raise TelemetryConfigError(f"{_key(name)}={raw!r} is not an integer; {fix}") from None
    if not low <= value <= high:
        raise TelemetryConfigError(f"{_key(name)}={value} is out of range [{low}, {high}]; {fix}")
    return value


def _readable_file(raw: Any, name: str, check_files: bool) -> str:
    path = str(raw)
    if check_files and not os.path.isfile(path):
        raise TelemetryConfigError(f"{_key(name)}={path!r}: no such file; give the path of a PEM file")
    return path


def parse_options(raw: Any, check_files: bool = True) -> TelemetryOptions:
    """Validate the ``algorithm.focal.metrics`` mapping (dict or None) into :class:`TelemetryOptions`.

    ``check_files=False`` checks structure only: the estimator re-reads its settings every step,
    and a file vanishing mid-run must not stop training.  The files are checked where the endpoint
    starts (the trainer, before any worker is created).
    """
    raw = dict(raw or {})
    auth = sorted(set(raw) & set(_BASIC_AUTH_KEYS))
    if auth:
        raise TelemetryConfigError(
            f"{', '.join(_key(k) for k in auth)}: basic auth is not offered by prometheus-client's HTTP server; "
            f"use TLS with client certificates ({_key('client_cafile')}, {_key('client_auth_required')}=true) "
            "or put the endpoint behind a reverse proxy that checks passwords"
        )
    unknown = sorted(set(raw) - set(KNOWN_KEYS))
    if unknown:
        raise TelemetryConfigError(
            f"unknown telemetry option {', '.join(_key(k) for k in unknown)}; "
            f"valid keys are {', '.join(_key(k) for k in KNOWN_KEYS)}"
        )
    enable = _as_bool(raw.get("enable", True), "enable")
    # enable=false turns telemetry off: its files are never opened, so a missing one must not stop a run.
    check_files = check_files and enable
    port = raw.get("port")
    if port is not None:
        port = _as_int(port, "port", 1, 65535, "use a free TCP port, e.g. +algorithm.focal.metrics.port=9464")
    addr = str(raw.get("addr", DEFAULT_ADDR))
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        raise TelemetryConfigError(
            f"{_key('addr')}={addr!r} is not an IP address; use 0.0.0.0 (all interfaces), 127.0.0.1 or a node IP"
        ) from None
    file_sd = raw.get("file_sd")
    if file_sd is not None:
        file_sd = str(file_sd)
        parent = os.path.dirname(os.path.abspath(file_sd))
        if check_files and not os.path.isdir(parent):
            raise TelemetryConfigError(
                f"{_key('file_sd')}={file_sd!r}: directory {parent!r} does not exist; create it or point the "
                "option at the directory Prometheus's file_sd_configs reads"
            )
        if port is None:
            raise TelemetryConfigError(f"{_key('file_sd')} is set but {_key('port')} is not: set a port too")
    certfile = _readable_file(raw["certfile"], "certfile", check_files) if raw.get("certfile") is not None else None
    keyfile = _readable_file(raw["keyfile"], "keyfile", check_files) if raw.get("keyfile") is not None else None
    if (certfile is None) != (keyfile is None):
        raise TelemetryConfigError(f"TLS needs both {_key('certfile')} and {_key('keyfile')}; set both or neither")
    client_cafile = (
        _readable_file(raw["client_cafile"], "client_cafile", check_files) if raw.get("client_cafile") else None
    )
    client_capath = raw.get("client_capath")
    if check_files and client_capath is not None and not os.path.isdir(str(client_capath)):
        raise TelemetryConfigError(f"{_key('client_capath')}={client_capath!r} is not a directory")
    client_auth_required = _as_bool(raw.get("client_auth_required", False), "client_auth_required")
    if (client_cafile or client_capath or client_auth_required) and certfile is None:
        raise TelemetryConfigError(
            f"client certificates need TLS: set {_key('certfile')} and {_key('keyfile')} as well"
        )
    capacity = _as_int(
        raw.get("tracker_capacity", DEFAULT_CAPACITY),
        "tracker_capacity",
        1,
        100_000_000,
        "the number of prompts to track (about 60 bytes each), e.g. 1000000",
    )
    history = _as_int(raw.get("history", DEFAULT_HISTORY), "history", 1, MAX_HISTORY, "e.g. 8")
    return TelemetryOptions(
        enable=enable,
        port=port,
        addr=addr,
        file_sd=None if file_sd is None else str(file_sd),
        job=str(raw.get("job", DEFAULT_JOB)),
        certfile=certfile,
        keyfile=keyfile,
        client_cafile=client_cafile,
        client_capath=None if client_capath is None else str(client_capath),
        client_auth_required=client_auth_required,
        tracker_capacity=capacity,
        history=history,
    )
