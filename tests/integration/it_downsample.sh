#!/usr/bin/env bash
# it_downsample.sh - `gpuwatch downsample` next to a running serve and
# offline, and queries over the aggregates through the HTTP API.
#
#   gw_rwload sends 1 node x 8 GPUs, dcgm-exporter series only, 60 s
#   scrapes, for the 3 UTC days before today (finished days); then:
#   1. `gpuwatch downsample --data-dir` while serve runs is handed to it
#      (POST /api/v1/admin/downsample) and downsamples 3 days;
#   2. Grafana-style 1 h and 5 min step panels (instant selector inside
#      avg, max_over_time[1h], last_over_time[5m]) answer the same JSON with
#      and without max_source_resolution=raw; a bad max_source_resolution
#      is a 400 naming it;
#   3. after serve stops, the offline `gpuwatch downsample` finds every day
#      done, then with --downsample.raw-retention 1d drops the 2 older raw
#      days; a new serve answers the qualifying panels as before, and
#      max_source_resolution=raw no longer sees the dropped days.
#
# Usage: bash it_downsample.sh <build_dir>
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build

port=$(gw_free_port)
gw="http://127.0.0.1:$port"
data="$GW_TMP/data"
gw_start_gpuwatch gw "$port" "$data" --downsample.interval 0 --no-detectors

day_ms=86400000
today=$(( $(date +%s) * 1000 / day_ms * day_ms ))
start_ms=$((today - 3 * day_ms))
gw_log "loading 1 node x 8 GPUs (dcgm), 3 days at 60 s"
"$GW_LOAD" send --url "$gw/api/v1/write" --nodes 1 --gpus 8 --jobs dcgm --hostname-label hostname \
    --duration 72h --interval 60s --start "$start_ms" --conns 2 --quiet >"$GW_TMP/load.out" ||
    gw_fail "load failed: $(cat "$GW_TMP/load.out")"
[[ "$(gw_http_code POST "$gw/api/v1/admin/flush")" == 200 ]] || gw_fail "flush failed"

out=$("$GW_BIN" downsample --data-dir "$data" --downsample.raw-retention 0) || gw_fail "downsample: $out"
grep -q '"daysDone":3' <<<"$out" || gw_fail "expected 3 days done over HTTP, got: $out"
gw_log "downsampled over HTTP: $out"

s=$((start_ms / 1000)); e=$((today / 1000))
panels=("avg by (hostname) (DCGM_FI_DEV_GPU_TEMP)|3600" "max_over_time(DCGM_FI_DEV_GPU_TEMP[1h])|3600"
        "last_over_time(DCGM_FI_DEV_POWER_USAGE[5m])|300" "DCGM_FI_DEV_GPU_TEMP|300")
q() { # EXPR STEP [RES] -> body
    local extra=()
    [[ -n "${3:-}" ]] && extra=(--data-urlencode "max_source_resolution=$3")
    curl -s --max-time 60 "$gw/api/v1/query_range" --data-urlencode "query=$1" -d "start=$s" -d "end=$e" \
        -d "step=$2" "${extra[@]}"
}
declare -A before
for p in "${panels[@]}"; do
    expr=${p%|*}; step=${p#*|}
    a=$(q "$expr" "$step"); b=$(q "$expr" "$step" raw)
    [[ "$a" == "$b" ]] || gw_fail "$expr: answer differs from raw"
    grep -q '"status":"success"' <<<"$a" || gw_fail "$expr: $a"
    before[$p]=$a
done
code=$(gw_http_code POST "$gw/api/v1/query?query=up&max_source_resolution=fine")
[[ "$code" == 400 ]] || gw_fail "bad max_source_resolution gave $code"
grep -q 'max_source_resolution' "$GW_TMP/last_body" || gw_fail "400 does not name the parameter: $(cat "$GW_TMP/last_body")"
gw_stop gw || gw_fail "serve did not stop cleanly"

out=$("$GW_BIN" downsample --data-dir "$data" --downsample.raw-retention 0) || gw_fail "offline: $out"
grep -q "downsampled 0 day(s), re-did 0, 3 already done" <<<"$out" || gw_fail "offline run not idempotent: $out"
out=$("$GW_BIN" downsample --data-dir "$data" --downsample.raw-retention 1d) || gw_fail "offline: $out"
grep -q "dropped 2 raw day(s)" <<<"$out" || gw_fail "expected 2 raw days dropped: $out"
gw_log "offline: $out"

gw_start_gpuwatch gw2 "$port" "$data" --downsample.interval 0 --no-detectors
for p in "${panels[@]}"; do
    expr=${p%|*}; step=${p#*|}
    a=$(q "$expr" "$step")
    [[ "$a" == "${before[$p]}" ]] || gw_fail "$expr: answer changed after the raw days were dropped"
done
a=$(q "DCGM_FI_DEV_GPU_TEMP" 3600 raw)
n=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(sum(len(r["values"]) for r in d["data"]["result"]))' "$a")
((n <= 8 * 25)) || gw_fail "max_source_resolution=raw still sees dropped days ($n points)"
gw_log "PASS"
