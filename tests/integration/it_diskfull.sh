#!/usr/bin/env bash
# it_diskfull.sh - a full disk: writes get 5xx and are retried, reads keep
# working, ingest resumes by itself when space returns, nothing
# acknowledged is lost, nothing corrupt.
#
# gpuwatch serve runs on a 64 MiB tmpfs (mounted by the test: needs root;
# without root it FAILs, or SKIPs with GW_ALLOW_SKIP=1) and takes a
# remote-write stream from gw_rwload (1 node x 8 GPUs, 15 s scrapes, 3
# simulated hours at 60,000 samples/s, ack log of every 2xx, retries 5xx
# for up to 5 min). Once writes flow, a filler file takes every free byte:
#   - a remote write gets 507 Insufficient Storage (a 5xx: Prometheus
#     retries it forever, honouring Retry-After) with a Retry-After header,
#     and the sender's acknowledgements stop;
#   - queries (instant, range, series, remote read) still answer 200;
# then the filler is deleted and, without any action, writes are
# acknowledged again within 30 s, the sender finishes with every sample
# acknowledged, every acknowledged sample reads back bit-exact, and
# `gpuwatch verify` is clean after a graceful stop; the data reads back
# again after a restart.
#
# Usage: bash it_diskfull.sh <build_dir>
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build
if [[ $(id -u) != 0 ]]; then
    if [[ "${GW_ALLOW_SKIP:-0}" == 1 ]]; then
        echo "SKIP: $GW_TEST_NAME: mounting a size-limited tmpfs needs root"
        exit 77
    fi
    gw_fail "mounting a size-limited tmpfs needs root (or set GW_ALLOW_SKIP=1 to skip)"
fi
mnt="$GW_TMP/mnt"
mkdir -p "$mnt"
mount -t tmpfs -o size=64m tmpfs "$mnt" || gw_fail "cannot mount a tmpfs on $mnt"
diskfull_cleanup() {
    local rc=$? n
    for n in "${!GW_PIDS[@]}"; do gw_kill9 "$n"; done
    umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
    return "$rc"
}
trap 'diskfull_cleanup; gw_cleanup' EXIT

port=$(gw_free_port)
url="http://127.0.0.1:$port"
data="$mnt/data"
ack="$GW_TMP/ack.log"
start_ms=$(( ($(date +%s) / 15 * 15 - 5 * 3600) * 1000 ))
gen=(--nodes 1 --gpus 8 --interval 15s --duration 3h --start "$start_ms" --hostname-label mixed --seed 3)
rw_hdr=(-H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: snappy'
    -H 'X-Prometheus-Remote-Write-Version: 0.1.0')

gw_start_gpuwatch gw "$port" "$data"
gw_start sender "$GW_TMP/sender.log" "$GW_LOAD" send --url "$url/api/v1/write" "${gen[@]}" \
    --conns 2 --batch 1000 --max-rate 60000 --ack-log "$ack" --retry-for 300s

acked_now() { if [[ -f "$ack" ]]; then echo $(($(wc -l <"$ack") - 1)); else echo 0; fi; }
probe_n=0
probe_write() { # HTTP status of a one-sample write (Retry-After -> $GW_TMP/probe.hdr)
    probe_n=$((probe_n + 1))
    "$GW_LOAD" body --snappy --series "__name__=diskfull_probe,job=probe" --ts "$(date +%s%3N)" --value "$probe_n" \
        --out "$GW_TMP/probe.sn" >/dev/null
    curl -s -D "$GW_TMP/probe.hdr" -o "$GW_TMP/probe.body" -w '%{http_code}' --max-time 20 \
        "${rw_hdr[@]}" --data-binary "@$GW_TMP/probe.sn" "$url/api/v1/write" || true
}

for _ in $(seq 300); do (($(acked_now) >= 100)) && break; sleep 0.1; done
(($(acked_now) >= 100)) || gw_fail "no writes acknowledged before filling the disk"
gw_log "$(acked_now) requests acked; filling the disk"
dd if=/dev/zero of="$mnt/filler" bs=1M status=none 2>/dev/null || true
df -k "$mnt" | tail -1 >&2

# writes fail with 507 + Retry-After (the WAL's next write meets ENOSPC;
# the answer may take a few requests to change while a segment has room)
code=
for _ in $(seq 100); do
    code=$(probe_write)
    [[ $code == 507 ]] && break
    sleep 0.2
done
[[ $code == 507 ]] || gw_fail "a write on a full disk got $code ($(head -c 300 "$GW_TMP/probe.body")), want 507"
grep -qi '^Retry-After: [0-9]' "$GW_TMP/probe.hdr" || gw_fail "the 507 has no Retry-After header"
gw_log "write on a full disk: 507, $(grep -i '^Retry-After' "$GW_TMP/probe.hdr" | tr -d '\r'), body: $(head -c 200 "$GW_TMP/probe.body")"
a0=$(acked_now)
sleep 3
a1=$(acked_now)
# a request in flight when the disk filled may still be answered; none after
((a1 - a0 <= 4)) || gw_fail "$((a1 - a0)) requests acknowledged in 3 s on a full disk"

# reads keep working
now=$(date +%s)
for q in "api/v1/query?query=count(DCGM_FI_DEV_GPU_TEMP)" \
    "api/v1/query_range?query=max(DCGM_FI_DEV_POWER_USAGE)&start=$((start_ms / 1000))&end=$now&step=60" \
    "api/v1/series?match[]=DCGM_FI_DEV_GPU_TEMP" "api/v1/labels" "-/ready"; do
    code=$(gw_http_code GET "$url/$q")
    [[ $code == 200 ]] || gw_fail "read $q on a full disk got $code: $(head -c 300 "$GW_TMP/last_body")"
done
gw_log "queries on a full disk: 200"
sleep 5
code=$(probe_write)
[[ $code == 507 ]] || gw_fail "a write 8 s into the full disk got $code, want 507"

gw_log "freeing the disk"
rm -f "$mnt/filler"
t0=$SECONDS
while (($(acked_now) == a1)); do
    ((SECONDS - t0 < 30)) || gw_fail "no write acknowledged within 30 s of space returning"
    sleep 0.2
done
gw_log "writes acknowledged again $((SECONDS - t0)) s after space returned"
code=$(probe_write)
[[ $code == 204 ]] || gw_fail "a write after space returned got $code: $(head -c 300 "$GW_TMP/probe.body")"

sender_rc=0
gw_wait sender 300 || sender_rc=$?
tail -5 "$GW_TMP/sender.log" >&2
((sender_rc == 0)) || gw_fail "sender failed (exit $sender_rc)"
grep -q 'result=OK' "$GW_TMP/sender.log" || gw_fail "sender did not report result=OK"
grep -q 'HTTP 507' "$GW_TMP/sender.log" || gw_fail "the sender never saw a 507 (was the disk ever full for it?)"

"$GW_LOAD" verify --read-url "$url/api/v1/read" --ack-log "$ack" "${gen[@]}" ||
    gw_fail "acknowledged samples lost or corrupted around the full disk"
gw_stop gw 120 || gw_fail "gpuwatch exited non-zero on SIGTERM"
"$GW_BIN" verify --data-dir "$data" --quiet || gw_fail "gpuwatch verify found problems after the full disk"
gw_start_gpuwatch gw "$port" "$data"
"$GW_LOAD" verify --read-url "$url/api/v1/read" --ack-log "$ack" "${gen[@]}" --streamed ||
    gw_fail "acknowledged samples lost or corrupted after a restart"
gw_stop gw 120 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS"
