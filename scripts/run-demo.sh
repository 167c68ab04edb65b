#!/usr/bin/env bash
# The main job on an embedded default: gpuwatch serving a local data dir,
# fed by (1) a simulated 4-node x 8-GPU training cluster (`gpuwatch simulate
# --profile smoke`: the last 6 hours backfilled, then live in real time, with
# failures injected 20x more often than in a real cluster so some show up;
# ground truth in DATA_DIR/sim-truth.jsonl) and (2) a local Prometheus that
# scrapes a local node_exporter every 5 s and remote-writes to gpuwatch.
# The detectors' alerts go to a local Alertmanager (when installed) and are
# listed at /api/v1/alerts. Ctrl-C stops everything.
#   usage: scripts/run-demo.sh BUILD_DIR DATA_DIR LISTEN_ADDR
set -euo pipefail
build=${1:-build}
data=${2:-./data}
listen=${3:-127.0.0.1:9201}
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

mkdir -p "$data"
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
for _ in $(seq 1 100); do
  curl -fsS "http://$listen/-/ready" >/dev/null 2>&1 && break
  sleep 0.1
done

if command -v prometheus-node-exporter >/dev/null && command -v prometheus >/dev/null; then
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
remote_write:
  - url: http://$listen/api/v1/write
    queue_config:
      batch_send_deadline: 2s
YML
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
  pids+=($!)
  echo "gpuwatch: http://$listen  (Prometheus http://127.0.0.1:$prom_port remote-writes node_exporter data to it)"
else
  echo "gpuwatch: http://$listen  (install prometheus and prometheus-node-exporter to feed it)"
fi
"$build/gpuwatch" simulate --profile smoke --seed 1 --start now-6h --days 30 --speed realtime \
  --failure-scale 20 --url "http://$listen/api/v1/write" --truth "$data/sim-truth.jsonl" \
  >"$work/simulate.log" 2>&1 &
pids+=($!)
echo "simulated cluster: 4 nodes x 8 GPUs (6 h backfilled, then live); ground truth: $data/sim-truth.jsonl"
echo "try: $build/gpuwatch query 'avg by (hostname) (DCGM_FI_DEV_GPU_TEMP)' --server http://$listen"
echo "     curl -s 'http://$listen/api/v1/label/__name__/values' | head -c 400; echo"
echo "     curl -s http://$listen/api/v1/alerts    # the detectors' alerts"
echo "     $build/gpuwatch stats --data-dir $data"
wait "$serve_pid"
