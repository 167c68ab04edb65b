#!/usr/bin/env bash
# it_promql_diff.sh - differential PromQL test: the same data in a real
# Prometheus 2.42 and in gpuwatch (--promql-compat 2, Prometheus 2's closed
# range windows); every expression of promql_cases.txt must give the same
# answer on both, as range queries and as instant queries.
#
#   1. promql_data.py writes ~250 series x 2 h (15 s scrapes with jitter,
#      ending 3 min before now) and meta.json (the time range);
#   2. Prometheus (--web.enable-remote-write-receiver, default lookback) and
#      `gpuwatch serve --promql-compat 2` start on free loopback ports;
#   3. `gw_rwload send-text` sends the data to both (remote write 1.0);
#   4. promql_diff.py runs the cases against both and prints every
#      failing case with a compact diff and `N passed, M failed`.
#
# Usage: bash it_promql_diff.sh <build_dir>
# Needs prometheus (GW_ALLOW_SKIP=1 to skip when it is missing).
# Env: GW_PQ_TARGET=prometheus checks the harness itself with a second
# Prometheus in gpuwatch's place; GW_PQ_ONLY=REGEX runs only matching
# expressions; GW_PQ_VERBOSE=1 lists the passing cases too; GW_PQ_JOBS
# (default 4) parallel queries.
source "$(dirname "$0")/lib.sh" "$@"
gw_require_bin prometheus
if [[ "${GW_PQ_TARGET:-gpuwatch}" == prometheus ]]; then
    [[ -x "$GW_LOAD" ]] || gw_fail "$GW_LOAD not built"
else
    gw_require_build
fi

ref_port=$(gw_free_port)
tgt_port=$(gw_free_port)
ref="http://127.0.0.1:$ref_port"
tgt="http://127.0.0.1:$tgt_port"

python3 "$GW_IT_DIR/promql_data.py" --out "$GW_TMP/data.txt" --meta "$GW_TMP/meta.json" ||
    gw_fail "promql_data.py failed"

printf 'global:\n  scrape_interval: 1m\n' >"$GW_TMP/prom.yml"
start_prometheus() { # NAME PORT
    gw_start "$1" "$GW_TMP/$1.log" prometheus --config.file="$GW_TMP/prom.yml" \
        --web.enable-remote-write-receiver --storage.tsdb.path="$GW_TMP/$1-data" \
        --web.listen-address="127.0.0.1:$2"
}
start_prometheus prom "$ref_port"
if [[ "${GW_PQ_TARGET:-gpuwatch}" == prometheus ]]; then
    start_prometheus target "$tgt_port"
    gw_wait_http target "$tgt/-/ready" 60
else
    gw_start_gpuwatch target "$tgt_port" "$GW_TMP/gwdata" --promql-compat 2
fi
gw_wait_http prom "$ref/-/ready" 60

for pair in "prom $ref" "target $tgt"; do
    read -r name url <<<"$pair"
    gw_log "sending the data to $name ($url)"
    "$GW_LOAD" send-text --url "$url/api/v1/write" --in "$GW_TMP/data.txt" --batch 2000 --retry-for 30s ||
        gw_fail "gw_rwload send-text to $name failed"
done

diff_args=(--ref "$ref" --target "$tgt" --meta "$GW_TMP/meta.json" --cases "$GW_IT_DIR/promql_cases.txt"
    --jobs "${GW_PQ_JOBS:-4}")
[[ -n "${GW_PQ_ONLY:-}" ]] && diff_args+=(--only "$GW_PQ_ONLY")
[[ "${GW_PQ_VERBOSE:-0}" == 1 ]] && diff_args+=(--verbose)
rc=0
python3 "$GW_IT_DIR/promql_diff.py" "${diff_args[@]}" || rc=$?

for name in prom target; do
    gw_alive "$name" || gw_fail "$name died during the run"
done
gw_stop prom 30 || true
gw_stop target 60 || gw_fail "the target exited non-zero on SIGTERM"
((rc == 0)) || gw_fail "PromQL answers differ (see above)"
gw_log "PASS"
