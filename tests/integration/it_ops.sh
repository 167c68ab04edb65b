#!/usr/bin/env bash
# it_ops.sh - the operator's view of gpuwatch serve, against a real
# Prometheus 2.42:
#   1. Prometheus scrapes gpuwatch's /metrics every second: the target is
#      healthy with no scrape error, up == 1, gpuwatch_build_info arrives;
#      `promtool check metrics` passes on the exposition and every family
#      has # HELP and # TYPE (status_shape.py metrics); the latency
#      histograms are there;
#   2. /api/v1/status/{buildinfo,runtimeinfo,flags,config,tsdb,walreplay}
#      have the keys and JSON types of Prometheus' own answers
#      (status_shape.py compare; flags and config compared as documented);
#   3. POST /-/reload and SIGHUP reload --config.file; a bad file is
#      refused (500, reloadConfigSuccess false, the metric at 0) and the
#      running configuration stays; SIGTERM exits 0;
#   4. with a WAL of ~60 MB left by kill -9, a restarted serve answers
#      /-/healthy 200 and /-/ready 503 "WAL replay N%" while it replays,
#      503 "starting" on queries, progress at /api/v1/status/walreplay and
#      in the log; then ready; SIGINT exits 0.
# Usage: bash it_ops.sh <build_dir>     Needs prometheus and promtool.
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build
gw_require_bin prometheus
gw_require_bin promtool
shape=(python3 "$GW_IT_DIR/status_shape.py")

gw_port=$(gw_free_port)
p_port=$(gw_free_port)
gw="http://127.0.0.1:$gw_port"
p="http://127.0.0.1:$p_port"
conf="$GW_TMP/detectors.conf"
printf 'xid_hold = 20m\n' >"$conf"

gw_start_gpuwatch gw "$gw_port" "$GW_TMP/data" --config.file "$conf" --storage.wal.fsync off
"$GW_LOAD" send --url "$gw/api/v1/write" --nodes 2 --gpus 8 --interval 15s --duration 30m --start now-35m \
    --conns 1 >"$GW_TMP/load1.log" 2>&1 || gw_fail "gw_rwload send failed"
curl -sf "$gw/api/v1/query?query=up" >/dev/null || gw_fail "query failed"
curl -sf "$gw/api/v1/query_range?query=up&start=$(($(date +%s) - 600))&end=$(date +%s)&step=15" >/dev/null ||
    gw_fail "query_range failed"

# ---- 1. Prometheus scrapes /metrics
cat >"$GW_TMP/prom.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpuwatch
    static_configs:
      - targets: ["127.0.0.1:$gw_port"]
YML
gw_start prom "$GW_TMP/prom.log" prometheus --config.file="$GW_TMP/prom.yml" \
    --storage.tsdb.path="$GW_TMP/promdata" --web.listen-address="127.0.0.1:$p_port"
gw_wait_http prom "$p/-/ready" 60
ok=0
for _ in $(seq 1 60); do
    if curl -s "$p/api/v1/targets" | python3 -c '
import json, sys
t = json.load(sys.stdin)["data"]["activeTargets"]
sys.exit(0 if len(t) == 1 and t[0]["health"] == "up" and t[0]["lastError"] == "" else 1)'; then
        ok=1
        break
    fi
    sleep 0.5
done
((ok)) || gw_fail "Prometheus' target for gpuwatch is not healthy: $(curl -s "$p/api/v1/targets")"
sleep 2.5   # a few more scrapes, all of them must succeed
curl -s "$p/api/v1/targets" | python3 -c '
import json, sys
t = json.load(sys.stdin)["data"]["activeTargets"][0]
sys.exit(0 if t["health"] == "up" and t["lastError"] == "" else 1)' || gw_fail "a later scrape failed: $(curl -s "$p/api/v1/targets")"
for q in 'up{job="gpuwatch"}' 'gpuwatch_build_info' 'process_start_time_seconds' \
    'gpuwatch_http_request_duration_seconds_count{handler="/api/v1/write"}'; do
    curl -s --data-urlencode "query=$q" "$p/api/v1/query" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
sys.exit(0 if r and all(float(x["value"][1]) >= 1 for x in r) else 1)' || gw_fail "Prometheus: $q is not >= 1"
done
curl -sf "$gw/metrics" >"$GW_TMP/metrics.txt" || gw_fail "/metrics failed"
promtool check metrics <"$GW_TMP/metrics.txt" >"$GW_TMP/promtool.out" 2>&1 ||
    gw_fail "promtool check metrics: $(cat "$GW_TMP/promtool.out")"
"${shape[@]}" metrics "$GW_TMP/metrics.txt" || gw_fail "/metrics families lack HELP/TYPE (above)"
for fam in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
    process_start_time_seconds process_open_fds process_max_fds gpuwatch_build_info \
    gpuwatch_remote_write_samples_accepted_total gpuwatch_remote_write_refused_total \
    gpuwatch_http_request_duration_seconds gpuwatch_query_duration_seconds gpuwatch_wal_fsync_duration_seconds \
    gpuwatch_db_flush_duration_seconds gpuwatch_db_checkpoint_duration_seconds gpuwatch_db_head_series \
    gpuwatch_db_wal_bytes gpuwatch_db_store_file_bytes gpuwatch_db_store_map_bytes gpuwatch_db_store_used_bytes \
    gpuwatch_detector_eval_seconds_total gpuwatch_alerts_active gpuwatch_alerts_notifications_queue_length \
    gpuwatch_alerts_notifications_errors_total gpuwatch_config_last_reload_successful \
    gpuwatch_config_last_reload_success_timestamp_seconds gpuwatch_db_max_time_seconds; do
    grep -q "^# TYPE $fam " "$GW_TMP/metrics.txt" || gw_fail "/metrics lacks the family $fam"
done
grep -q '^gpuwatch_query_duration_seconds_count{kind="range"} [1-9]' "$GW_TMP/metrics.txt" ||
    gw_fail "the range query was not observed"
# gpuwatch_db_max_time_seconds is the newest sample (within the last 10 min), not the end of the day
python3 - "$GW_TMP/metrics.txt" <<'PY' || gw_fail "gpuwatch_db_max_time_seconds is not the newest sample time"
import sys, time
v = [float(l.split()[1]) for l in open(sys.argv[1]) if l.startswith("gpuwatch_db_max_time_seconds ")]
now = time.time()
sys.exit(0 if v and now - 600 < v[0] <= now + 1 else 1)
PY
gw_log "1. /metrics scraped by Prometheus, promtool clean"

# ---- 2. status API shapes against Prometheus 2.42
for e in buildinfo runtimeinfo flags config tsdb walreplay; do
    curl -sf "$p/api/v1/status/$e" >"$GW_TMP/p_$e.json" || gw_fail "Prometheus /api/v1/status/$e failed"
    curl -sf "$gw/api/v1/status/$e" >"$GW_TMP/g_$e.json" || gw_fail "gpuwatch /api/v1/status/$e failed"
    "${shape[@]}" compare "$e" "$GW_TMP/p_$e.json" "$GW_TMP/g_$e.json" || gw_fail "status/$e differs in shape (above)"
done
python3 - "$GW_TMP" "$GW_TMP/data" <<'PY' || gw_fail "status values are wrong"
import json, sys
d = sys.argv[1]
g = lambda e: json.load(open(f"{d}/g_{e}.json"))["data"]
f = g("flags")
assert f["storage.path"] == sys.argv[2], f
assert f["storage.wal.fsync"] == "off" and f["storage.retention.time"] == "55d", f
assert "xid_hold: '20m'" in g("config")["yaml"]
t = g("tsdb")
assert t["headStats"]["numSeries"] > 0 and t["seriesCountByMetricName"], t["headStats"]
assert len(t["seriesCountByLabelValuePair"]) == 10
r = g("runtimeinfo")
assert r["reloadConfigSuccess"] is True and r["storageRetention"] == "55d", r
b = g("buildinfo")
assert len(b["revision"]) >= 40 or b["revision"] == "unknown", b
PY
gw_log "2. status API has Prometheus' shapes"

# ---- 3. reload, signals
code=$(gw_http_code POST "$gw/-/reload")
[[ "$code" == 200 ]] || gw_fail "POST /-/reload answered $code: $(cat "$GW_TMP/last_body")"
printf 'xid_hold = soon\n' >"$conf"
code=$(gw_http_code POST "$gw/-/reload")
[[ "$code" == 500 ]] || gw_fail "a bad config was not refused: $code"
grep -q 'xid_hold' "$GW_TMP/last_body" || gw_fail "the refusal does not say why: $(cat "$GW_TMP/last_body")"
curl -s "$gw/metrics" | grep -q '^gpuwatch_config_last_reload_successful 0' || gw_fail "reload failure not in /metrics"
curl -s "$gw/api/v1/status/runtimeinfo" | grep -q '"reloadConfigSuccess":false' || gw_fail "reload failure not in runtimeinfo"
curl -s "$gw/api/v1/status/config" | grep -q "xid_hold: '20m'" || gw_fail "the running configuration did not stay"
kill -HUP "$(gw_pid gw)"
sleep 0.5
gw_alive gw || gw_fail "SIGHUP killed serve"
printf 'xid_hold = 25m\n' >"$conf"
kill -HUP "$(gw_pid gw)"
ok=0
for _ in $(seq 1 50); do
    if curl -s "$gw/api/v1/status/config" | grep -q "xid_hold: '25m'"; then ok=1; break; fi
    sleep 0.1
done
((ok)) || gw_fail "SIGHUP did not reload the configuration"
curl -s "$gw/metrics" | grep -q '^gpuwatch_config_last_reload_successful 1' || gw_fail "reload success not in /metrics"
grep -q 'configuration reload refused' "$GW_TMP/gw.log" || gw_fail "the refused reload is not logged"
rc=0
gw_stop gw || rc=$?
[[ "$rc" == 0 ]] || gw_fail "SIGTERM: serve exited $rc"
grep -q 'msg="stopped"' "$GW_TMP/gw.log" || gw_fail "no clean stop in the log"
gw_log "3. reload (POST, SIGHUP, refused bad file), SIGTERM exit 0"

# ---- 4. HTTP up during the WAL replay
gw_start_gpuwatch gw2 "$gw_port" "$GW_TMP/data2" --storage.wal.fsync off --detector.disable
"$GW_LOAD" send --url "$gw/api/v1/write" --nodes 6 --gpus 8 --interval 15s --duration 2h --start now-125m \
    --conns 2 >"$GW_TMP/load2.log" 2>&1 || gw_fail "gw_rwload send (2) failed"
wal_mb=$(du -sm "$GW_TMP/data2/wal" | cut -f1)
gw_kill9 gw2
gw_log "WAL of ${wal_mb} MB left by kill -9; restarting"
gw_start gw3 "$GW_TMP/gw3.log" "$GW_BIN" serve --listen "127.0.0.1:$gw_port" --data-dir "$GW_TMP/data2" --no-detectors
seen_replay=0 seen_healthy=0 seen_query503=0 seen_walreplay=0 ready=0
for _ in $(seq 1 600); do
    gw_alive gw3 || gw_fail "serve died during the replay"
    code=$(gw_http_code GET "$gw/-/ready")
    if [[ "$code" == 200 ]]; then ready=1; break; fi
    if [[ "$code" == 503 ]] && grep -q 'WAL replay [0-9]*%' "$GW_TMP/last_body"; then
        seen_replay=1
        [[ "$(gw_http_code GET "$gw/-/healthy")" == 200 ]] && seen_healthy=1
        # a query and a write of the same round both 503 "starting" (the
        # replay may end between them: only a round with both counts)
        q503=0
        code=$(gw_http_code GET "$gw/api/v1/query?query=up")
        [[ "$code" == 503 ]] && grep -q '"errorType":"unavailable","error":"starting: WAL replay' "$GW_TMP/last_body" &&
            q503=1
        code=$(gw_http_code POST "$gw/api/v1/write")
        if ((q503)) && [[ "$code" == 503 ]] && grep -q '^starting: WAL replay' "$GW_TMP/last_body"; then
            seen_query503=1
        fi
        curl -s "$gw/api/v1/status/walreplay" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
sys.exit(0 if d["max"] >= 1 and d["min"] <= d["current"] <= d["max"] else 1)' && seen_walreplay=1
    fi
    sleep 0.05
done
((ready)) || gw_fail "serve did not become ready after the replay"
((seen_replay)) || gw_fail "/-/ready never answered 503 with the replay's progress"
((seen_healthy)) || gw_fail "/-/healthy did not answer 200 during the replay"
((seen_query503)) || gw_fail "queries did not answer 503 starting during the replay"
((seen_walreplay)) || gw_fail "/api/v1/status/walreplay showed no progress"
grep -q 'component=progress msg="WAL replay"' "$GW_TMP/gw3.log" || gw_fail "no replay progress in the log"
curl -s "$gw/api/v1/query?query=count(up)" | grep -q '"success"' || gw_fail "query after the replay failed"
kill -INT "$(gw_pid gw3)"
rc=0
gw_wait gw3 60 || rc=$?
[[ "$rc" == 0 ]] || gw_fail "SIGINT: serve exited $rc"
gw_log "4. HTTP answered during the replay of ${wal_mb} MB; SIGINT exit 0"
echo "PASS: $GW_TEST_NAME"
