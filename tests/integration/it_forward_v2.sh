#!/usr/bin/env bash
# it_forward_v2.sh - forwarding with remote write 2.0: a gpuwatch serving
# with --forward URL --forward.protocol 2 sends what it accepts on to a
# second gpuwatch (which decodes io.prometheus.write.v2.Request), and every
# sample arrives: the destination holds every sample gw_rwload had
# acknowledged by the first (gw_rwload verify over remote read), and
# sum(count_over_time(X[3h])) is the same on both.
#
# Usage: bash it_forward_v2.sh <build_dir>
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build

src_port=$(gw_free_port)
dst_port=$(gw_free_port)
src="http://127.0.0.1:$src_port"
dst="http://127.0.0.1:$dst_port"
ack="$GW_TMP/ack.log"
start_ms=$(( ($(date +%s) / 15 * 15 - 2 * 3600) * 1000 ))
gen=(--nodes 2 --gpus 8 --interval 15s --duration 60m --start "$start_ms" --seed 5)

gw_start_gpuwatch dst "$dst_port" "$GW_TMP/dst"
gw_start_gpuwatch src "$src_port" "$GW_TMP/src" --forward "$dst/api/v1/write" --forward.protocol 2 \
    --forward.batch-size 500
gw_log "gpuwatch :$src_port forwarding with remote write 2.0 to gpuwatch :$dst_port"
"$GW_LOAD" send --url "$src/api/v1/write" "${gen[@]}" --conns 2 --batch 2000 --ack-log "$ack" --quiet \
    >"$GW_TMP/sender.log" 2>&1 || { cat "$GW_TMP/sender.log" >&2; gw_fail "sender failed"; }

q='sum(count_over_time(DCGM_FI_DEV_GPU_TEMP[3h]))'
total() { curl -sS --max-time 10 "$1/api/v1/query" --data-urlencode "query=$q" |
          python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'; }
want=$(total "$src")
((want > 0)) || gw_fail "the forwarding gpuwatch holds no DCGM_FI_DEV_GPU_TEMP samples"
got=0
for _ in $(seq 1 60); do
    got=$(total "$dst")
    [[ "$got" == "$want" ]] && break
    sleep 0.25
done
[[ "$got" == "$want" ]] || gw_fail "forwarded with 2.0: $got of $want DCGM_FI_DEV_GPU_TEMP samples arrived; $(grep -i forward "$GW_TMP/src.log" | tail -3)"
"$GW_LOAD" verify --read-url "$dst/api/v1/read" --ack-log "$ack" "${gen[@]}" >"$GW_TMP/verify.log" 2>&1 ||
    { cat "$GW_TMP/verify.log" >&2; gw_fail "the destination lacks acknowledged samples"; }
refused=$(curl -s --max-time 5 "$dst/metrics" | awk '/^gpuwatch_remote_write_refused_total/ {s += $2} END {print s + 0}')
[[ "$refused" == 0 ]] || gw_fail "the destination refused $refused forwarded requests"
gw_log "OK: $want DCGM_FI_DEV_GPU_TEMP samples on both; every acknowledged sample forwarded ($(tail -1 "$GW_TMP/verify.log"))"

gw_stop src 30 || gw_fail "the forwarding gpuwatch exited non-zero on SIGTERM"
gw_stop dst 30 || gw_fail "the destination gpuwatch exited non-zero on SIGTERM"
echo "PASS: $GW_TEST_NAME"
