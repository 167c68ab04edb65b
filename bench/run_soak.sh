#!/usr/bin/env bash
# run_soak.sh - the soak: gpuwatch serve under ten times the reference
# cluster's write rate for SOAK_MINUTES (default 30), with a dashboard
# refreshing all the time and a graceful restart in the middle.
#
# Reference cluster: 63 nodes x 8 GPUs scraped every 15 s. gw_rwload's
# generator gives it 122,913 series (47 dcgm-exporter series per GPU, ~1575
# node_exporter series per node), so 8,194 samples/s; the soak sends the
# same series at 10x that, 81,942 samples/s (--max-rate), i.e. 10 simulated
# minutes per wall minute, over 4 connections in batches of 2000 (a
# Prometheus with 4 shards). Writes that get 5xx/429 or no answer (the
# restart) are retried by the sender with backoff for up to 120 s.
# Meanwhile tests/faults/soak_queries.py sends the 24 panel queries of
# bench/dashboard_queries.txt (1 h range, 15 s step, over the newest
# acknowledged data) every 10 s. RSS of gpuwatch is sampled every 10 s.
# At half time gpuwatch gets SIGTERM and is started again on its data dir.
#
# Passes when: the sender acknowledged every sample (result=OK, nothing
# refused), every query ended in a 200, gpuwatch exits 0 on both SIGTERMs,
# and memory is flat: the peak RSS of the last quarter of the run is at most
# 1.25 x the peak RSS of the second quarter (after the warm-up quarter, before
# the restart) + 64 MiB. A leak of more than ~25 % over a quarter of the run
# fails; the head's own growth (it holds up to 2 simulated hours, reached
# after 12 wall minutes) is inside the bound.
#
# Usage: bash bench/run_soak.sh [--build build] [--minutes N] [--out FILE.md]
# Env: SOAK_MINUTES (default 30), SOAK_RATE (samples/s, default 81942).
# `make soak` runs it for 30 minutes; SOAK_MINUTES=2 is the quick check.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=build
minutes=${SOAK_MINUTES:-30}
rate=${SOAK_RATE:-81942}
out=
while (($#)); do
    case $1 in
    --build) build=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "run_soak.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ $minutes =~ ^[0-9]+$ ]] && ((minutes >= 1)) || { echo "run_soak.sh: --minutes wants a whole number >= 1" >&2; exit 2; }
source "$root/tests/integration/lib.sh" "$build"
source "$root/bench/lib.sh"   # field
gw_require_build

port=$(gw_free_port)
url="http://127.0.0.1:$port"
data="$GW_TMP/data"
ack="$GW_TMP/ack.log"
rss="$GW_TMP/rss.tsv"
stopq="$GW_TMP/stop_queries"
sim_min=$((minutes * 10))         # 10 simulated minutes per wall minute at $rate
start_ms=$(( ($(date +%s) / 15 * 15 - (sim_min + 30) * 60) * 1000 ))
gen=(--nodes 63 --gpus 8 --interval 15s --duration "${sim_min}m" --start "$start_ms" --hostname-label mixed --seed 11)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
commit0=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')   # the source the binary was built from, at best

gw_start_gpuwatch gw "$port" "$data"
gw_log "gpuwatch up on $port; soak of $minutes min at $rate samples/s (load before: $load0)"
t_start=$SECONDS
gw_start sender "$GW_TMP/sender.log" "$GW_LOAD" send --url "$url/api/v1/write" "${gen[@]}" \
    --conns 4 --batch 2000 --max-rate "$rate" --ack-log "$ack" --retry-for 120s --quiet
gw_start queries "$GW_TMP/queries.log" python3 "$root/tests/faults/soak_queries.py" --url "$url" \
    --queries "$root/bench/dashboard_queries.txt" --ack-log "$ack" --stop "$stopq" --lat-out "$GW_TMP/lat.txt"

run_s=$((minutes * 60))
restarted=0
restart_s=0
loads=()
printf 'elapsed_s\trss_kib\tacked_requests\n' >"$rss"
while ((SECONDS - t_start < run_s)) && gw_alive sender; do
    el=$((SECONDS - t_start))
    if ((restarted == 0 && el >= run_s / 2)); then
        gw_log "graceful restart at ${el}s"
        r0=$SECONDS
        gw_stop gw 300 || gw_fail "gpuwatch exited non-zero on SIGTERM (restart)"
        gw_start_gpuwatch gw "$port" "$data"
        restart_s=$((SECONDS - r0))
        restarted=1
        continue
    fi
    if gw_alive gw; then
        acked=0
        [[ -f $ack ]] && acked=$(($(wc -l <"$ack") - 1))
        printf '%d\t%s\t%d\n' "$el" "$(gw_rss_kb "$(gw_pid gw)")" "$acked" >>"$rss"
    fi
    if ((el % 300 < 10)); then loads+=("$(cut -d' ' -f1 /proc/loadavg)"); fi
    sleep 10
done
gw_alive sender && gw_log "run time over; waiting for the sender to finish"
sender_rc=0
gw_wait sender 900 || sender_rc=$?
t_send=$((SECONDS - t_start))
touch "$stopq"
gw_wait queries 300 || gw_fail "query client failed (see $GW_TMP/queries.log)"
qline=$(grep '^queries=' "$GW_TMP/queries.log" | tail -1)
sline=$(grep 'result=' "$GW_TMP/sender.log" | tail -1)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
gw_stop gw 300 || gw_fail "gpuwatch exited non-zero on the final SIGTERM"

# Memory: quarters of the run by elapsed time.
read -r q2_peak q4_peak rss_min rss_max < <(awk -F'\t' -v r="$run_s" 'NR > 1 {
    if ($1 >= r / 4 && $1 < r / 2 && $2 > q2) q2 = $2
    if ($1 >= 3 * r / 4 && $2 > q4) q4 = $2
    if (mn == "" || $2 < mn) mn = $2
    if ($2 > mx) mx = $2 }
    END { printf "%d %d %d %d\n", q2, q4, mn, mx }' "$rss")
mem_ok=$(awk -v a="$q2_peak" -v b="$q4_peak" 'BEGIN { print (a > 0 && b > 0 && b <= 1.25 * a + 65536) ? 1 : 0 }')
samples=$(field samples "$sline")
retries=$(field retries "$sline")

report() {
    echo "# Soak $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, shared with other work (load average before: $load0; after: $load1; every 5 min: ${loads[*]:-})."
    echo "gpuwatch: $("$GW_BIN" version 2>/dev/null | head -1 || true), source commit $commit0 when the run started, serve defaults (--fsync batch)."
    echo "Command: \`SOAK_MINUTES=$minutes bash bench/run_soak.sh --build $build\`: gw_rwload send ${gen[*]} --conns 4 --batch 2000 --max-rate $rate; dashboard: 24 panel queries (bench/dashboard_queries.txt, 1 h range, 15 s step) every 10 s; graceful restart at $((run_s / 2)) s."
    echo
    echo "| figure | value |"
    echo "|---|---|"
    echo "| run time (start to sender done) | ${t_send} s |"
    echo "| samples acknowledged | $samples |"
    echo "| samples/s (sender's average, restart included) | $(field samples_per_s "$sline") over $(field elapsed_s "$sline") s |"
    echo "| sender | \`$sline\` |"
    echo "| write retries (5xx/429/no answer, all then acknowledged) | $retries |"
    echo "| restart (SIGTERM to ready again) | ${restart_s} s |"
    echo "| dashboard queries | \`$qline\` |"
    echo "| RSS min / max over the run | $((rss_min / 1024)) / $((rss_max / 1024)) MiB |"
    echo "| RSS peak 2nd quarter / last quarter | $((q2_peak / 1024)) / $((q4_peak / 1024)) MiB (bound: last <= 1.25 x 2nd + 64 MiB) |"
    echo
    echo "RSS by minute (max of the 10 s samples in that minute; restart at minute $((run_s / 120))):"
    echo
    echo "| minute | RSS MiB | acked requests |"
    echo "|---|---|---|"
    awk -F'\t' 'NR > 1 { m = int($1 / 60); if ($2 > r[m]) r[m] = $2; a[m] = $3; if (m > mm) mm = m }
        END { for (m = 0; m <= mm; m++) if (m in r) printf "| %d | %d | %d |\n", m, r[m] / 1024, a[m] }' "$rss"
}
if [[ -n $out ]]; then report >"$out"; gw_log "wrote $out"; else report; fi

fail=()
((sender_rc == 0)) && [[ $sline == *result=OK* ]] || fail+=("sender did not get every write acknowledged (exit $sender_rc): $sline")
[[ $qline == *" errors=0 "* ]] || fail+=("dashboard queries failed: $qline")
((mem_ok == 1)) || fail+=("memory grew: peak RSS $((q4_peak / 1024)) MiB in the last quarter vs $((q2_peak / 1024)) MiB in the second")
((${#fail[@]} == 0)) || gw_fail "$(printf '%s; ' "${fail[@]}")"
gw_log "PASS: $samples samples in ${t_send} s, $qline"
