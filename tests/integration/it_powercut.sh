#!/usr/bin/env bash
# it_powercut.sh - acknowledged writes survive power cuts with --fsync always.
#
# gpuwatch serve --storage.wal.fsync always runs under the power-cut layer
# (tests/faults/powercut_shim.so: an undo journal of every write to the
# data dir not yet synced) and takes a remote-write stream from gw_rwload
# (1 node x 8 GPUs, 15 s scrapes, 3 simulated hours, as fast as it goes,
# ack log of every 2xx). At GW_POWERCUT_CUTS random moments (0.2-1.2 s
# apart, each after new acknowledgements) gpuwatch gets SIGKILL and
# tests/faults/powercut_restore.py undoes every unsynced write, size change
# and unsynced creation: the data dir is what a power cut at that moment
# leaves. Then `gpuwatch verify` must find the store and WAL clean (every
# GW_POWERCUT_VERIFY_EVERY-th cut and after the last), and gpuwatch must
# start on it again; the sender retries while it is down. Then the sender
# finishes, one more cut, `gpuwatch verify` again, and every
# acknowledged sample must read back bit-exact (remote read SAMPLES and
# STREAMED_XOR_CHUNKS), again after a graceful restart without the layer.
#
# Usage: bash it_powercut.sh <build_dir>
# Env: GW_POWERCUT_CUTS (default 12; `make test-powercut` runs 200),
#      GW_POWERCUT_HOURS (simulated hours sent, default 3),
#      GW_POWERCUT_NODES (default 1; the WAL passes the 32 MiB that makes
#      startup checkpoint and truncate it from ~2 nodes x 6 h on),
#      GW_POWERCUT_TORN=1 (every other cut tears: a random prefix of each
#      page's unsynced writes stays), GW_POWERCUT_VERIFY_EVERY (default 5).
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build
shim="$GW_BUILD/powercut_shim.so"
restore="$GW_IT_DIR/../faults/powercut_restore.py"
[[ -f $shim ]] || gw_fail "$shim not built"

cuts_min=${GW_POWERCUT_CUTS:-12}
hours=${GW_POWERCUT_HOURS:-3}
nodes=${GW_POWERCUT_NODES:-1}
torn=${GW_POWERCUT_TORN:-0}
verify_every=${GW_POWERCUT_VERIFY_EVERY:-5}
port=$(gw_free_port)
data="$GW_TMP/data"
journal="$GW_TMP/journal"
ack="$GW_TMP/ack.log"
url="http://127.0.0.1:$port"
mkdir -p "$data"
start_ms=$(( ($(date +%s) / 15 * 15 - (hours + 2) * 3600) * 1000 ))
gen=(--nodes "$nodes" --gpus 8 --interval 15s --duration "${hours}h" --start "$start_ms" --hostname-label mixed --seed 5)

start_under_shim() {
    gw_start gw "$GW_TMP/gw.log" env LD_PRELOAD="$shim" GW_PC_DIR="$data" GW_PC_JOURNAL="$journal" \
        "$GW_BIN" serve --listen "127.0.0.1:$port" --data-dir "$data" --storage.wal.fsync always
    gw_wait_http gw "$url/-/ready" "${GW_READY_SECS:-60}"
}
verify_dir() {
    "$GW_BIN" verify --data-dir "$data" --quiet >"$GW_TMP/verify.out" 2>&1 ||
        { cat "$GW_TMP/verify.out" >&2; gw_fail "gpuwatch verify found problems after $1"; }
}

start_under_shim
gw_log "gpuwatch (under the power-cut layer) up on $port; sending ${hours}h of $nodes node(s) x 8 GPUs"
gw_start sender "$GW_TMP/sender.log" "$GW_LOAD" send --url "$url/api/v1/write" "${gen[@]}" \
    --conns 2 --batch 1000 --ack-log "$ack" --retry-for 120s --quiet

acked_now() { if [[ -f "$ack" ]]; then echo $(($(wc -l <"$ack") - 1)); else echo 0; fi; }
cuts=0
torn_cuts=0
undone_total=0
cut() { # cut [--torn SEED]: SIGKILL, then the disk as a power cut leaves it
    gw_kill9 gw
    out=$(python3 "$restore" --dir "$data" --journal "$journal" "$@") || gw_fail "restore failed: $out"
    rm -f "$journal"
    undone_total=$((undone_total + $(sed -n 's/^undone=\([0-9]*\).*/\1/p' <<<"$out")))
}
while ((cuts < cuts_min)); do
    ms=$((200 + RANDOM % 1000))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    for _ in $(seq 100); do # every cut lands while writes flow
        if (($(acked_now) > ${acked:-0})) || ! gw_alive sender; then break; fi
        sleep 0.2
    done
    acked=$(acked_now)
    cuts=$((cuts + 1))
    mode=()
    if [[ $torn == 1 ]] && ((cuts % 2 == 0)); then mode=(--torn "$cuts"); torn_cuts=$((torn_cuts + 1)); fi
    cut "${mode[@]}"
    gw_log "power cut #$cuts after ${ms} ms ($acked requests acked)${mode[*]:+ torn}: $out"
    if ((cuts % verify_every == 0)); then verify_dir "power cut #$cuts"; fi
    start_under_shim
done

gw_log "letting the sender finish"
sender_rc=0
gw_wait sender 300 || sender_rc=$?
cat "$GW_TMP/sender.log" >&2
((sender_rc == 0)) || gw_fail "sender failed (exit $sender_rc): see its output above"
grep -q 'result=OK' "$GW_TMP/sender.log" || gw_fail "sender did not report result=OK"

# one more cut with the stream finished, then the checks without the layer
cut
gw_log "last power cut, after the stream: $out"
((undone_total > 0)) || gw_fail "no power cut undid anything: the layer did not see gpuwatch's writes"
verify_dir "the last power cut"
gw_start_gpuwatch gw "$port" "$data" --storage.wal.fsync always
gw_log "verifying after $cuts power cuts ($torn_cuts torn, $undone_total writes undone): remote read SAMPLES"
"$GW_LOAD" verify --read-url "$url/api/v1/read" --ack-log "$ack" "${gen[@]}" ||
    gw_fail "acknowledged samples lost or corrupted by a power cut (SAMPLES)"
"$GW_LOAD" verify --read-url "$url/api/v1/read" --ack-log "$ack" "${gen[@]}" --streamed ||
    gw_fail "acknowledged samples lost or corrupted by a power cut (STREAMED_XOR_CHUNKS)"
gw_stop gw 120 || gw_fail "gpuwatch exited non-zero on SIGTERM"
verify_dir "the graceful stop"
gw_start_gpuwatch gw "$port" "$data" --storage.wal.fsync always
"$GW_LOAD" verify --read-url "$url/api/v1/read" --ack-log "$ack" "${gen[@]}" ||
    gw_fail "acknowledged samples lost or corrupted after graceful restart"
gw_stop gw 120 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS ($cuts power cuts, $torn_cuts torn, $undone_total unsynced writes undone)"
