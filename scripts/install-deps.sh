#!/usr/bin/env bash
# Installs the Debian packages gpuwatch needs to build, test and benchmark.
# Idempotent: does nothing when everything is present. Run as root.
#
# Usage: scripts/install-deps.sh [--dry-run]
#   --dry-run  print what is missing, which services run now and what would
#              be done; change nothing (no root needed)
#
# Services: Debian's postinst scripts start prometheus, its node exporter,
# Alertmanager and VictoriaMetrics when they are installed; the tests and
# the demo start their own. This script never stops or restarts a service
# it did not start: during `apt-get install` a policy-rc.d that answers 101
# keeps every service from being started (an existing policy-rc.d is kept
# aside and put back afterwards), and a service of the list that is active
# afterwards but was not before (started anyway, e.g. by a trigger) is
# stopped again. Services that were running before are left alone.
# Environment (for tests): GW_POLICY_RC_D (default /usr/sbin/policy-rc.d).
set -euo pipefail
dry=0
case "${1:-}" in
  --dry-run) dry=1 ;;
  "") ;;
  *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac
pkgs=(build-essential clang cmake pkg-config
      libprotobuf-c-dev protobuf-c-compiler libsnappy-dev libmicrohttpd-dev libgnutls28-dev
      liblmdb-dev lmdb-utils libcmocka-dev libxxhash-dev libzstd-dev libpcre2-dev libcurl4-openssl-dev
      libjansson-dev chromium firefox-esr
      prometheus prometheus-node-exporter victoria-metrics curl python3
      prometheus-alertmanager)
services=(prometheus prometheus-node-exporter prometheus-alertmanager victoria-metrics)
policy=${GW_POLICY_RC_D:-/usr/sbin/policy-rc.d}

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  [ "$dry" -eq 0 ] || echo "install-deps: nothing missing"
  exit 0
fi

have_systemctl=0
command -v systemctl >/dev/null 2>&1 && have_systemctl=1
active_services() {  # the services of the list that are active now, one per line
  [ "$have_systemctl" -eq 1 ] || return 0
  local s
  for s in "${services[@]}"; do
    if systemctl is-active --quiet "$s" 2>/dev/null; then echo "$s"; fi
  done
}
before=$(active_services)

if [ "$dry" -eq 1 ]; then
  echo "install-deps: would install: ${missing[*]}"
  echo "install-deps: services active now (left alone): ${before:-none}"
  echo "install-deps: would block service starts with $policy (exit 101) during apt-get install," \
       "then stop only services of (${services[*]}) that are active afterwards and were not before"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install: ${missing[*]}" >&2
  exit 1
fi

saved=""
restore_policy() {
  rm -f "$policy"
  if [ -n "$saved" ]; then mv -f "$saved" "$policy"; fi
}
if [ -e "$policy" ]; then
  saved="$policy.gpuwatch-install-deps"
  mv -f "$policy" "$saved"
fi
trap restore_policy EXIT
mkdir -p "$(dirname "$policy")"
printf '#!/bin/sh\n# install-deps.sh (gpuwatch): no service starts while it installs packages\nexit 101\n' >"$policy"
chmod 755 "$policy"

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
restore_policy
trap - EXIT

after=$(active_services)
for s in $after; do
  if ! printf '%s\n' "$before" | grep -qx "$s"; then
    echo "install-deps: stopping $s (started by this install)"
    systemctl stop "$s" || true
  fi
done
