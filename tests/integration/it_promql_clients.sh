#!/usr/bin/env bash
# it_promql_clients.sh - real Prometheus API clients against gpuwatch loaded
# with data: promtool (query instant|range|series|labels), Grafana's
# data-source check, and `gpuwatch query` over HTTP and on the data dir.
#
#   gw_rwload sends 1 node x 8 GPUs (dcgm-exporter + node_exporter shaped
#   series, 15 s scrapes) for the 30 minutes ending a minute ago; then:
#   1. Grafana's "Save & test": POST /api/v1/query query=1+1&time=4 answers
#      exactly {"status":"success","data":{"resultType":"scalar","result":[4,"2"]}}
#      (and GET the same); buildinfo has no "features" map (Grafana would
#      take a features map for Mimir);
#   2. promtool query instant/range/series/labels print what the data holds
#      (8 GPUs; 8 series per GPU metric; gpu values 0..7; sums by gpu);
#      a parse error makes promtool fail with the parser's message;
#   3. /api/v1/format_query prettifies;
#   4. `gpuwatch query --json` over HTTP gives the server's bytes, and on the
#      data dir (read-only, next to the running serve, after serve flushed
#      its head into the store) the same bytes for the same instant and
#      range queries; the table output shows the value.
#
# Usage: bash it_promql_clients.sh <build_dir>
# Needs promtool (package prometheus; GW_ALLOW_SKIP=1 to skip without it).
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build
gw_require_bin promtool

port=$(gw_free_port)
gw="http://127.0.0.1:$port"
data="$GW_TMP/data"
gw_start_gpuwatch gw "$port" "$data"

now_ms=$(( $(date +%s) / 60 * 60 * 1000 ))
start_ms=$((now_ms - 31 * 60 * 1000))
gw_log "loading 1 node x 8 GPUs, 30 min"
"$GW_LOAD" send --url "$gw/api/v1/write" --nodes 1 --gpus 8 --duration 30m --interval 15s \
    --start "$start_ms" --conns 2 --quiet >"$GW_TMP/load.out" || gw_fail "load failed: $(cat "$GW_TMP/load.out")"
t=$(( now_ms / 1000 - 120 ))          # a time inside the data, whole seconds
t_start=$(( t - 600 ))

expect_eq() { # WHAT GOT WANT
    [[ "$2" == "$3" ]] || gw_fail "$1: got [$2], want [$3]"
}

# 1. Grafana's data-source check and build info.
want='{"status":"success","data":{"resultType":"scalar","result":[4,"2"]}}'
got=$(curl -s --max-time 10 -X POST -H 'Content-Type: application/x-www-form-urlencoded' \
    --data 'query=1%2B1&time=4' "$gw/api/v1/query")
expect_eq "Grafana check (POST)" "$got" "$want"
got=$(curl -s --max-time 10 "$gw/api/v1/query?query=1%2B1&time=4")
expect_eq "Grafana check (GET)" "$got" "$want"
bi=$(curl -s --max-time 10 "$gw/api/v1/status/buildinfo")
python3 - "$bi" <<'EOF' || gw_fail "buildinfo: $bi"
import json, sys
d = json.loads(sys.argv[1])
assert d["status"] == "success"
for k in ("version", "revision", "branch", "buildUser", "buildDate", "goVersion"):
    assert isinstance(d["data"][k], str), k
assert "features" not in d["data"]
EOF
gw_log "Grafana data-source check and buildinfo: ok"

# 2. promtool.
out=$(promtool query instant --time "$t" "$gw" 'count(DCGM_FI_DEV_GPU_TEMP)') || gw_fail "promtool instant failed"
[[ "$out" == "{} => 8 @[$t]" ]] || gw_fail "promtool instant: [$out]"
out=$(promtool query instant --time "$t" "$gw" 'sum by (gpu) (DCGM_FI_DEV_FB_TOTAL)') || gw_fail "promtool instant by gpu"
n=$(grep -c '^{gpu="[0-7]"} => 183359 @\['"$t"'\]$' <<<"$out" || true)
expect_eq "promtool instant sum by (gpu): $out" "$n" 8
out=$(promtool query instant -o json --time "$t" "$gw" 'max(DCGM_FI_DEV_GPU_TEMP) >= bool 0') ||
    gw_fail "promtool instant json"
python3 - "$out" <<'EOF' || gw_fail "promtool -o json: $out"
import json, sys
d = json.loads(sys.argv[1])
assert len(d) == 1 and d[0]["value"][1] == "1", d
EOF
out=$(promtool query range --start "$t_start" --end "$t" --step 60s "$gw" \
    'sum by (gpu) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[2m]))') || gw_fail "promtool range failed"
n=$(grep -c '^{gpu="[0-7]"} =>$' <<<"$out" || true)
expect_eq "promtool range series" "$n" 8
n=$(grep -c ' @\[' <<<"$out" || true)
expect_eq "promtool range points (8 series x 11 steps)" "$n" 88
out=$(promtool query series --match 'DCGM_FI_DEV_GPU_TEMP' --start "$t_start" --end "$t" "$gw") ||
    gw_fail "promtool series failed"
n=$(grep -c '__name__="DCGM_FI_DEV_GPU_TEMP"' <<<"$out" || true)
expect_eq "promtool series" "$n" 8
out=$(promtool query labels "$gw" gpu) || gw_fail "promtool labels failed"
expect_eq "promtool labels gpu" "$(tr '\n' ' ' <<<"$out")" "0 1 2 3 4 5 6 7 "
if promtool query instant "$gw" 'sum(rate(x[5m])' >"$GW_TMP/bad.out" 2>&1; then
    gw_fail "promtool accepted a broken query"
fi
grep -q 'parse error' "$GW_TMP/bad.out" || gw_fail "promtool error: $(cat "$GW_TMP/bad.out")"
gw_log "promtool query instant|range|series|labels: ok"

# 3. format_query.
got=$(curl -s --max-time 10 --data-urlencode 'query=sum(rate(x{a="b"}[5m]))by(job)' "$gw/api/v1/format_query")
expect_eq "format_query" "$got" '{"status":"success","data":"sum by (job) (rate(x{a=\"b\"}[5m]))"}'
code=$(gw_http_code GET "$gw/api/v1/format_query?query=sum(")
expect_eq "format_query error status" "$code" 400

# 4. gpuwatch query over HTTP and on the data dir.
q='avg by (gpu) (DCGM_FI_DEV_GPU_TEMP) > 0'
http_json=$(curl -s --max-time 10 --data-urlencode "query=$q" --data "time=$t" "$gw/api/v1/query")
cli_json=$("$GW_BIN" query "$q" --server "$gw" --time "$t" --json) || gw_fail "gpuwatch query --server failed"
expect_eq "gpuwatch query --server --json" "$cli_json" "$http_json"
# A read-only reader sees what the store holds: have serve move its head there.
code=$(gw_http_code POST "$gw/api/v1/admin/flush")
[[ "$code" == 2* ]] || gw_fail "admin/flush answered $code"
dir_json=$("$GW_BIN" query "$q" --data-dir "$data" --time "$t" --json) || gw_fail "gpuwatch query --data-dir failed"
expect_eq "gpuwatch query --data-dir --json" "$dir_json" "$http_json"
rq='sum(DCGM_FI_DEV_POWER_USAGE)'
http_json=$(curl -s --max-time 10 --data-urlencode "query=$rq" --data "start=$t_start&end=$t&step=30" \
    "$gw/api/v1/query_range")
dir_json=$("$GW_BIN" query "$rq" --data-dir "$data" --start "$t_start" --end "$t" --step 30s --json) ||
    gw_fail "gpuwatch query range --data-dir failed"
expect_eq "gpuwatch query range --data-dir --json" "$dir_json" "$http_json"
table=$("$GW_BIN" query 'count(DCGM_FI_DEV_GPU_TEMP)' --server "$gw" --time "$t") || gw_fail "gpuwatch query table"
grep -Eq '^\{\} +8$' <<<"$table" || gw_fail "gpuwatch query table: [$table]"
if "$GW_BIN" query 'sum(' --server "$gw" >"$GW_TMP/bad.out" 2>&1; then
    gw_fail "gpuwatch query accepted a broken query"
fi
grep -q 'bad_data' "$GW_TMP/bad.out" || gw_fail "gpuwatch query error: $(cat "$GW_TMP/bad.out")"
gw_log "gpuwatch query --server/--data-dir: ok"

gw_stop gw || gw_fail "gpuwatch did not stop cleanly"
echo "PASS: $GW_TEST_NAME"
