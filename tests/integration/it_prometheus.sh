#!/usr/bin/env bash
# it_prometheus.sh - a real Prometheus remote-writes to gpuwatch; both must
# then answer the same, and a second Prometheus reading gpuwatch through
# remote read must answer like the first.
#
#   node_exporter (own collectors + textfile: dcgm-exporter shaped series
#   for 2 nodes x 8 GPUs, half `hostname`, half `Hostname`, rewritten every
#   2 s) <- Prometheus A (scrape 1 s, remote_write batch_send_deadline 1 s)
#   -> gpuwatch.  After ~45 s, for T a few seconds in the past:
#   1. A and gpuwatch give the same raw samples for {__name__=~".+"}[30s]
#      at T (label sets, timestamps, value strings);
#   2. gpuwatch's series/labels/label values over the range are
#      consistent with that;
#   3. query_range of a few metrics is equal on A and gpuwatch;
#   4. Prometheus B (empty TSDB, remote_read gpuwatch, read_recent) gives
#      the same query_range and raw range-selector answers as A;
#   5. gpuwatch's detectors saw the XID 79 the textfile latches on gpu002's
#      GPU 3 (a firing GpuXidError at /api/v1/alerts). Its own ALERTS series
#      are left out of 1 and 2.
#
# Usage: bash it_prometheus.sh <build_dir>
# Needs prometheus and prometheus-node-exporter (GW_ALLOW_SKIP=1 to skip).
# Env: GW_IT_SCRAPE_SECS (default 45); GW_IT_RECEIVER=prometheus checks the
# harness itself with a Prometheus receiver in gpuwatch's place.
source "$(dirname "$0")/lib.sh" "$@"
[[ "${GW_IT_RECEIVER:-gpuwatch}" == prometheus ]] || gw_require_build
gw_require_bin prometheus
NODE_EXPORTER=prometheus-node-exporter
command -v "$NODE_EXPORTER" >/dev/null 2>&1 || NODE_EXPORTER=node_exporter
gw_require_bin "$NODE_EXPORTER"

run_secs=${GW_IT_SCRAPE_SECS:-45}
range=30
gw_port=$(gw_free_port)
ne_port=$(gw_free_port)
pa_port=$(gw_free_port)
pb_port=$(gw_free_port)
gw="http://127.0.0.1:$gw_port"
pa="http://127.0.0.1:$pa_port"
pb="http://127.0.0.1:$pb_port"
cmp=(python3 "$GW_IT_DIR/promcompare.py")

mkdir -p "$GW_TMP/textfile" "$GW_TMP/pa" "$GW_TMP/pb"
python3 "$GW_IT_DIR/dcgm_textfile.py" --dir "$GW_TMP/textfile" --once
gw_start textfile "$GW_TMP/textfile.log" python3 "$GW_IT_DIR/dcgm_textfile.py" --dir "$GW_TMP/textfile" --period 2

if [[ "${GW_IT_RECEIVER:-gpuwatch}" == prometheus ]]; then
    # Harness self-check: a Prometheus remote-write receiver stands in for gpuwatch.
    printf 'global:\n  scrape_interval: 1m\n' >"$GW_TMP/recv.yml"
    gw_start gw "$GW_TMP/gw.log" prometheus --config.file="$GW_TMP/recv.yml" --web.enable-remote-write-receiver \
        --storage.tsdb.path="$GW_TMP/gwdata" --web.listen-address="127.0.0.1:$gw_port"
    gw_wait_http gw "$gw/-/ready" 60
else
    gw_start_gpuwatch gw "$gw_port" "$GW_TMP/gwdata"
fi

gw_start node_exporter "$GW_TMP/node_exporter.log" "$NODE_EXPORTER" \
    --web.listen-address="127.0.0.1:$ne_port" \
    --collector.disable-defaults \
    --collector.textfile --collector.textfile.directory="$GW_TMP/textfile" \
    --collector.cpu --collector.meminfo --collector.loadavg --collector.stat \
    --collector.vmstat --collector.netdev --collector.filesystem --collector.time \
    --collector.uname --collector.diskstats
gw_wait_http node_exporter "http://127.0.0.1:$ne_port/metrics" 30

cat >"$GW_TMP/pa.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$ne_port']
remote_write:
  - url: $gw/api/v1/write
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 30ms
      max_backoff: 1s
    metadata_config:
      send_interval: 10s
EOF
cat >"$GW_TMP/pb.yml" <<EOF
global:
  scrape_interval: 1m
remote_read:
  - url: $gw/api/v1/read
    read_recent: true
EOF

gw_start prom_a "$GW_TMP/prom_a.log" prometheus --config.file="$GW_TMP/pa.yml" \
    --storage.tsdb.path="$GW_TMP/pa" --web.listen-address="127.0.0.1:$pa_port"
gw_wait_http prom_a "$pa/-/ready" 60
gw_log "scraping for ${run_secs}s (gpuwatch :$gw_port, node_exporter :$ne_port, prometheus :$pa_port)"
sleep "$run_secs"

for name in gw node_exporter prom_a textfile; do
    gw_alive "$name" || gw_fail "$name died during the run"
done

T=$("${cmp[@]}" pick-time --prom "$pa" --back 8) || gw_fail "cannot pick a query time from Prometheus"
start=$(python3 -c "print('%.3f' % ($T - $range))")
gw_log "comparing at T=$T over ${range}s"

failed=0
# gpuwatch writes its detectors' ALERTS series itself: left out of the comparison (checked below)
all_but_alerts="{__name__=~\".+\",__name__!=\"ALERTS\"}"
"${cmp[@]}" matrix --ref "$pa" --got "$gw" --query "$all_but_alerts[${range}s]" --time "$T" --wait 60 || failed=1
"${cmp[@]}" meta --ref "$pa" --got "$gw" --query "$all_but_alerts[${range}s]" --time "$T" \
    --start "$start" --end "$T" --exclude-got ALERTS || failed=1
for q in DCGM_FI_DEV_GPU_TEMP DCGM_FI_DEV_POWER_USAGE 'DCGM_FI_DEV_XID_ERRORS{Hostname="gpu002"}' \
    node_cpu_seconds_total up; do
    "${cmp[@]}" range --ref "$pa" --got "$gw" --query "$q" --start "$start" --end "$T" --step 2 --wait 10 || failed=1
done

gw_start prom_b "$GW_TMP/prom_b.log" prometheus --config.file="$GW_TMP/pb.yml" \
    --storage.tsdb.path="$GW_TMP/pb" --web.listen-address="127.0.0.1:$pb_port"
gw_wait_http prom_b "$pb/-/ready" 60
for q in DCGM_FI_DEV_GPU_TEMP 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{hostname="gpu001"}' \
    'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION' 'node_memory_MemFree_bytes' 'up'; do
    "${cmp[@]}" range --ref "$pa" --got "$pb" --query "$q" --start "$start" --end "$T" --step 1 --wait 10 || failed=1
done
for q in "DCGM_FI_DEV_POWER_USAGE[${range}s]" "{job=\"node\",__name__=~\"DCGM_.*\"}[${range}s]"; do
    "${cmp[@]}" matrix --ref "$pa" --got "$pb" --query "$q" --time "$T" --wait 10 || failed=1
done

# The textfile latches XID 79 on gpu002's GPU 3 after its tenth round: gpuwatch's D1
# must have seen the edge through Prometheus' remote write and alerted.
curl -fsS --max-time 10 "$gw/api/v1/alerts" >"$GW_TMP/alerts.json" || failed=1
python3 - "$GW_TMP/alerts.json" <<'PY' || failed=1
import json, sys
alerts = json.load(open(sys.argv[1]))["data"]["alerts"]
hit = [a for a in alerts if a["labels"].get("alertname") == "GpuXidError" and a["labels"].get("xid") == "79"
       and a["labels"].get("hostname") == "gpu002" and a["labels"].get("gpu") == "3"
       and a["labels"].get("action") == "reboot_node" and a["state"] == "firing"]
if not hit:
    print("FAIL alerts: no firing GpuXidError xid=79 on gpu002 GPU 3; got %s" % [a["labels"] for a in alerts])
    sys.exit(1)
print("OK alerts: XID 79 on gpu002 GPU 3 firing since %s" % hit[0]["activeAt"])
PY

((failed == 0)) || gw_fail "answers differ (see above)"
gw_stop prom_b 30 || true
gw_stop prom_a 30 || true
gw_stop gw 60 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS"
