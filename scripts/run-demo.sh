#!/usr/bin/env bash
# The main job on an embedded default: gpuwatch serving a local data dir,
# fed by
#   (1) a simulated 16-node x 8-GPU training cluster (`gpuwatch simulate`,
#       seed 23, the series the detectors read; GW_DEMO_ALL_SERIES=1 sends
#       every exporter series): the last 3 hours are backfilled at full
#       speed (about 10 s on an idle machine), then it runs live in real time; failures are injected 100x
#       more often than in a real cluster (--failure-scale 100), so the
#       status page shows within a minute the GPUs that failed in the last
#       hours (with this seed two GPUs that fell off the bus, still firing
#       when the backfill ends) and new failures keep coming. Ground truth:
#       DATA_DIR/sim-truth.jsonl;
#   (2) when prometheus and prometheus-node-exporter are installed, a local
#       Prometheus that scrapes a local node_exporter and gpuwatch's own
#       /metrics every 5 s and remote-writes to gpuwatch (the real path);
#       GW_DEMO_PROMETHEUS=0 leaves it out.
# The detectors' alerts go to a local Alertmanager (when installed), are
# listed at /api/v1/alerts and shown on the status page at http://LISTEN/.
# Ctrl-C stops everything this script started (by PID).
#
# The simulation needs a data dir of its own: a DATA_DIR left by an earlier
# demo (it holds .gpuwatch-demo) is started afresh; a non-empty DATA_DIR
# without that mark is refused (GW_DEMO_SIM=0 runs without the simulation).
#   usage: scripts/run-demo.sh BUILD_DIR DATA_DIR LISTEN_ADDR
set -euo pipefail
build=${1:-build}
data=${2:-./data}
listen=${3:-127.0.0.1:9201}
sim=${GW_DEMO_SIM:-1}
seed=${GW_DEMO_SEED:-23}
nodes=${GW_DEMO_NODES:-16}
work=$(mktemp -d /tmp/gpuwatch-demo.XXXXXX)
pids=()
cleanup() {
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$work"
  exit 0
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ "$sim" = 1 ] && [ -d "$data" ] && [ -n "$(ls -A "$data" 2>/dev/null)" ]; then
  if [ -e "$data/.gpuwatch-demo" ]; then
    echo "demo: $data holds an earlier demo's data; starting it afresh"
    rm -rf "$data"
  else
    echo "demo: $data is not empty and not an earlier demo's data dir; the simulated cluster would" >&2
    echo "      collide with it. Use another DATA (make run DATA=./demo-data) or GW_DEMO_SIM=0." >&2
    exit 1
  fi
fi
mkdir -p "$data"
[ "$sim" = 1 ] && touch "$data/.gpuwatch-demo"

am_args=()
if command -v prometheus-alertmanager >/dev/null; then
  am_port=$(free_port)
  am_cluster=$(free_port)
  cat >"$work/alertmanager.yml" <<YML
route:
  receiver: log
  group_by: [alertname, hostname]
  group_wait: 10s
  group_interval: 1m
receivers:
  - name: log
YML
  prometheus-alertmanager --config.file="$work/alertmanager.yml" --storage.path="$work/am" \
    --web.listen-address="127.0.0.1:$am_port" --cluster.listen-address="127.0.0.1:$am_cluster" \
    >"$work/alertmanager.log" 2>&1 &
  pids+=($!)
  am_args=(--alertmanager "http://127.0.0.1:$am_port")
  echo "Alertmanager: http://127.0.0.1:$am_port (receives gpuwatch's alerts)"
fi
"$build/gpuwatch" serve --listen "$listen" --data-dir "$data" "${am_args[@]}" &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 300); do
  curl -fsS "http://$listen/-/ready" >/dev/null 2>&1 && break
  kill -0 "$serve_pid" 2>/dev/null || { echo "demo: gpuwatch serve exited" >&2; exit 1; }
  sleep 0.1
done
echo
echo "  status page:  http://$listen/"
echo

if [ "${GW_DEMO_PROMETHEUS:-1}" = 1 ] && command -v prometheus-node-exporter >/dev/null && command -v prometheus >/dev/null; then
  ne_port=$(free_port)
  prom_port=$(free_port)
  prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" >"$work/node_exporter.log" 2>&1 &
  pids+=($!)
  cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$ne_port']
  - job_name: gpuwatch
    static_configs:
      - targets: ['$listen']
remote_write:
  - url: http://$listen/api/v1/write
    send_exemplars: false
    queue_config:
      max_samples_per_send: 5000
      batch_send_deadline: 2s
YML
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
  pids+=($!)
  echo "Prometheus: http://127.0.0.1:$prom_port (scrapes node_exporter and gpuwatch every 5 s, remote-writes to gpuwatch)"
fi

if [ "$sim" = 1 ]; then
  only=(--only-detector-series)
  [ "${GW_DEMO_ALL_SERIES:-0}" = 1 ] && only=()
  "$build/gpuwatch" simulate "${only[@]}" --profile smoke --seed "$seed" --nodes "$nodes" --start now-3h --days 30 --speed realtime \
    --failure-scale 100 --url "http://$listen/api/v1/write" --truth "$data/sim-truth.jsonl" \
    >"$work/simulate.log" 2>&1 &
  pids+=($!)
  echo "simulated cluster: $nodes nodes x 8 GPUs, failures 100x a real cluster's rate; backfilling the last 3 hours..."
  # the backfill is done when the newest sample is within a minute of now
  for _ in $(seq 1 120); do
    newest=$(curl -s "http://$listen/api/v1/query" --data-urlencode 'query=time() - max(timestamp(DCGM_FI_DEV_GPU_TEMP))' |
      python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 99999)' 2>/dev/null || echo 99999)
    [ "$newest" -lt 60 ] && break
    sleep 1
  done
  firing=$(curl -s "http://$listen/api/v1/alerts" | python3 -c 'import json,sys; a=json.load(sys.stdin)["data"]["alerts"]; print(sum(x["state"]=="firing" for x in a))' 2>/dev/null || echo "?")
  echo "backfill done: $firing alert(s) firing now, see http://$listen/; the ground truth is in $data/sim-truth.jsonl"
fi
echo "try: $build/gpuwatch query 'avg by (hostname) (DCGM_FI_DEV_GPU_TEMP)' --server http://$listen"
echo "     curl -s http://$listen/api/v1/alerts    # the detectors' alerts"
echo "     curl -s http://$listen/api/v1/exclusions?format=hosts"
echo "     $build/gpuwatch stats --data-dir $data"
wait "$serve_pid"
