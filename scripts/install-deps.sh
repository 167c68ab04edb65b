#!/usr/bin/env bash
# Installs the Debian packages gpuwatch needs to build, test and benchmark.
# Idempotent: does nothing when everything is present. Run as root.
set -euo pipefail
pkgs=(build-essential clang cmake pkg-config
      libprotobuf-c-dev protobuf-c-compiler libsnappy-dev libmicrohttpd-dev
      liblmdb-dev lmdb-utils libcmocka-dev libxxhash-dev libzstd-dev libpcre2-dev libcurl4-openssl-dev
      libjansson-dev chromium
      prometheus prometheus-node-exporter victoria-metrics curl python3
      prometheus-alertmanager)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The Debian packages may start system services; tests start their own peers.
for svc in prometheus prometheus-node-exporter victoria-metrics prometheus-alertmanager; do
  (command -v systemctl >/dev/null && systemctl stop "$svc" 2>/dev/null) || true
done
