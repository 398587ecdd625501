#!/usr/bin/env bash
# System packages the tests drive for real: a Prometheus server and promtool (Debian's package),
# and openssl (the telemetry TLS test makes its certificates with it).
set -euo pipefail
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install_system_deps: prometheus/promtool missing; run as root or: sudo apt-get install -y prometheus" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends prometheus openssl >/dev/null
# The package may start a service; the tests run their own server on loopback.
(service prometheus stop || systemctl stop prometheus || true) >/dev/null 2>&1
