#!/usr/bin/env bash
# it_backup.sh - online backup under write load, restore, second serve.
#
# gpuwatch serve takes a remote-write stream from gw_rwload (4 nodes x 8
# GPUs, 15 s scrapes, several simulated hours, ack log of every 2xx). While
# it writes, the ack log's complete lines are noted and `gpuwatch backup`
# asks the running serve for a backup (POST /api/v1/admin/backup). The
# backup is restored into a new dir, a second serve started on it, and
# every sample acknowledged before the backup began is checked through its
# remote read (gw_rwload verify with the ack log cut at the noted line).
# `gpuwatch verify` must pass on the source (serve still running) and on
# the restored dir; `gpuwatch restore` must refuse the non-empty dir
# without --force and a dir a serve runs on. Then an export of the
# restored dir imported into an empty dir must export identically.
#
# Usage: bash it_backup.sh <build_dir>
# Env: GW_BACKUP_HOURS (default 4).
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build

hours=${GW_BACKUP_HOURS:-4}
port=$(gw_free_port)
port2=$(gw_free_port)
data="$GW_TMP/data"
bk="$GW_TMP/backup"
restored="$GW_TMP/restored"
ack="$GW_TMP/ack.log"
url="http://127.0.0.1:$port"
url2="http://127.0.0.1:$port2"
start_ms=$(( ($(date +%s) / 15 * 15 - (hours + 2) * 3600) * 1000 ))
gen=(--nodes 4 --gpus 8 --interval 15s --duration "${hours}h" --start "$start_ms" --hostname-label mixed --seed 11)

gw_start_gpuwatch gw "$port" "$data" --fsync batch
gw_start sender "$GW_TMP/sender.log" "$GW_LOAD" send --url "$url/api/v1/write" "${gen[@]}" \
    --conns 2 --batch 2000 --ack-log "$ack" --max-rate 200000 --quiet

# Let some requests be acknowledged and a flush happen, then back up.
for _ in $(seq 1 200); do
    [[ -f "$ack" ]] && (($(wc -l <"$ack") > 20)) && break
    sleep 0.1
done
curl -s -X POST "$url/api/v1/admin/flush" >/dev/null || true
sleep 0.5
lines=$(wc -l <"$ack")
head -n "$lines" "$ack" >"$GW_TMP/ack.before"
gw_log "backup while writing ($((lines - 1)) requests acknowledged before it began)"
"$GW_BIN" backup --data-dir "$data" --out "$bk" || gw_fail "gpuwatch backup failed"
gw_alive sender || gw_log "note: the sender finished before the backup did"
"$GW_BIN" restore --from "$bk" --check || gw_fail "backup does not check"

gw_log "verify the source while serve runs"
"$GW_BIN" verify --data-dir "$data" --quiet || gw_fail "verify found problems in the live source"

gw_log "restore and start a second serve"
"$GW_BIN" restore --from "$bk" --data-dir "$restored" || gw_fail "restore failed"
"$GW_BIN" restore --from "$bk" --data-dir "$restored" 2>/dev/null &&
    gw_fail "restore into a non-empty dir without --force succeeded"
"$GW_BIN" verify --data-dir "$restored" --quiet || gw_fail "verify found problems in the restored dir"
gw_start_gpuwatch gw2 "$port2" "$restored"
"$GW_BIN" restore --from "$bk" --data-dir "$restored" --force 2>/dev/null &&
    gw_fail "restore over a dir a serve runs on succeeded"
"$GW_LOAD" verify --read-url "$url2/api/v1/read" --ack-log "$GW_TMP/ack.before" "${gen[@]}" ||
    gw_fail "samples acknowledged before the backup are missing from the restored store"

gw_wait sender 600 || gw_fail "sender failed"
gw_stop gw 120 || gw_fail "gpuwatch exited non-zero on SIGTERM"

gw_log "export the restored dir through its serve, import into an empty dir, export again"
"$GW_BIN" export --url "$url2" --match '{__name__=~"DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_POWER_USAGE"}' \
    --out "$GW_TMP/a.om" || gw_fail "export failed"
gw_stop gw2 120 || gw_fail "second gpuwatch exited non-zero on SIGTERM"
"$GW_BIN" import --data-dir "$GW_TMP/imported" "$GW_TMP/a.om" || gw_fail "import failed"
"$GW_BIN" export --data-dir "$GW_TMP/imported" \
    --match '{__name__=~"DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_POWER_USAGE"}' --out "$GW_TMP/b.om" ||
    gw_fail "second export failed"
cmp -s "$GW_TMP/a.om" "$GW_TMP/b.om" || gw_fail "export -> import -> export differs"
[[ $(wc -l <"$GW_TMP/a.om") -gt 10 ]] || gw_fail "the export is (nearly) empty"
printf 'up{a="1"} 1 1700000000000\nup{a="1"} 2\n' >"$GW_TMP/bad.prom"
if "$GW_BIN" import --data-dir "$GW_TMP/imported" "$GW_TMP/bad.prom" 2>"$GW_TMP/bad.err"; then
    gw_fail "import of a line without a timestamp succeeded"
fi
grep -q 'bad.prom:2: sample without a timestamp' "$GW_TMP/bad.err" || gw_fail "import did not name file:line"
gw_log "PASS"
