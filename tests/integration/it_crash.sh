#!/usr/bin/env bash
# it_crash.sh - durability of acknowledged writes across kill -9.
#
# gpuwatch serve (--fsync batch) takes a remote-write stream from
# gw_rwload (4 nodes x 8 GPUs, 15 s scrapes, 4 simulated hours, as
# fast as it goes, ack log of every 2xx). Meanwhile gpuwatch is killed
# with SIGKILL at random moments (0.3-2 s apart, at least 6 times, at
# most 40: on a loaded machine the rest of the stream then goes to the last
# gpuwatch) and restarted on the same data dir and port; the sender
# retries while it is down. Afterwards every acknowledged sample must read back bit-exact, with
# no duplicate timestamps, through remote read SAMPLES and
# STREAMED_XOR_CHUNKS; then once more after a graceful stop and restart
# (data now served from the flushed store).
#
# Usage: bash it_crash.sh <build_dir>
# Env: GW_CRASH_KILLS (default 6), GW_CRASH_HOURS (default 4).
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build

kills_min=${GW_CRASH_KILLS:-6}
kills_max=40
hours=${GW_CRASH_HOURS:-4}
port=$(gw_free_port)
data="$GW_TMP/data"
ack="$GW_TMP/ack.log"
url="http://127.0.0.1:$port"
# Whole seconds, aligned to the scrape interval, well inside retention.
start_ms=$(( ($(date +%s) / 15 * 15 - (hours + 2) * 3600) * 1000 ))
gen=(--nodes 4 --gpus 8 --interval 15s --duration "${hours}h" --start "$start_ms" --hostname-label mixed --seed 7)

gw_start_gpuwatch gw "$port" "$data" --fsync batch
gw_log "gpuwatch up on $port; sending ${hours}h of 4 nodes x 8 GPUs"

gw_start sender "$GW_TMP/sender.log" "$GW_LOAD" send --url "$url/api/v1/write" "${gen[@]}" \
    --conns 4 --batch 2000 --ack-log "$ack" --retry-for 90s --quiet

acked_now() { if [[ -f "$ack" ]]; then echo $(($(wc -l <"$ack") - 1)); else echo 0; fi; }
kills=0
while gw_alive sender || ((kills < kills_min)); do
    ms=$((300 + RANDOM % 1700))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    # every kill lands while writes flow: wait (up to 20 s) until this
    # gpuwatch has acknowledged something (the sender backs off up to 5 s
    # after the previous kill, longer on a loaded machine)
    for _ in $(seq 100); do
        if (( $(acked_now) > ${acked:-0} )) || ! gw_alive sender; then break; fi
        sleep 0.2
    done
    acked=$(acked_now)
    gw_kill9 gw
    kills=$((kills + 1))
    gw_log "kill -9 #$kills after ${ms} ms ($acked requests acked so far)"
    gw_start_gpuwatch gw "$port" "$data" --fsync batch
    if ((kills >= kills_max)); then
        # a slow (loaded) machine: enough kills landed under load; let the
        # sender finish against this last gpuwatch
        gw_log "$kills kills and the sender still runs: no more kills, waiting for it"
        break
    fi
done

sender_rc=0
gw_wait sender 600 || sender_rc=$?
cat "$GW_TMP/sender.log" >&2
((sender_rc == 0)) || gw_fail "sender failed (exit $sender_rc): see its output above"
grep -q 'result=OK' "$GW_TMP/sender.log" || gw_fail "sender did not report result=OK"

gw_log "verifying after $kills kills (remote read SAMPLES)"
"$GW_LOAD" verify --read-url "$url/api/v1/read" --ack-log "$ack" "${gen[@]}" ||
    gw_fail "acked samples lost or corrupted after kill -9 (SAMPLES)"
gw_log "verifying (remote read STREAMED_XOR_CHUNKS)"
"$GW_LOAD" verify --read-url "$url/api/v1/read" --ack-log "$ack" "${gen[@]}" --streamed ||
    gw_fail "acked samples lost or corrupted after kill -9 (STREAMED_XOR_CHUNKS)"

gw_log "graceful stop, restart, verify again"
gw_stop gw 120 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_start_gpuwatch gw "$port" "$data" --fsync batch
"$GW_LOAD" verify --read-url "$url/api/v1/read" --ack-log "$ack" "${gen[@]}" ||
    gw_fail "acked samples lost or corrupted after graceful restart"
gw_stop gw 120 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS ($kills kills)"
