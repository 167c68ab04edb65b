#!/usr/bin/env bash
# run_compact_bench.sh - bytes on disk per sample of gpuwatch before and
# after `gpuwatch compact`, next to VictoriaMetrics, on identical data:
#   sim:    gpuwatch simulate --profile paper scaled to --nodes (default 8)
#           x 8 GPUs, 30 s scrapes;
#   rwload: gw_rwload's generic exporter-shaped load (dcgm-exporter +
#           node_exporter per node), same nodes, --rw-interval (default 30s).
# Both cover --days whole UTC days ending at today's 00:00 UTC (so every day
# is finished and compaction sees all of them; default 55, the design's
# retention; fewer days extrapolate poorly to 55 only in the per-day index
# share, which the table shows apart).
#
# Per dataset and system, on a fresh data dir on 127.0.0.1 free ports,
# servers stopped by PID:
#   gpuwatch: serve --compact.schedule off --retention 400d
#     --downsample.interval 0 (serve would otherwise add 5 m and 1 h
#     aggregates of the finished days, which VictoriaMetrics does not
#     keep; --downsample below measures them apart); send; POST
#     /api/v1/admin/flush; SIGTERM; du of the data dir ("before"); then
#     `gpuwatch compact --data-dir DIR --json` offline (re-encoding and the
#     LMDB compacting copy); du again ("after").
#   VictoriaMetrics: -retentionPeriod 100y; send; /internal/force_flush,
#     /internal/force_merge (which only starts the merges), then wait until
#     its /metrics show no active merge of any kind (vm_active_force_merges
#     and vm_active_merges all 0) and the data dir stops changing, both for
#     3 readings 10 s apart (at most 90 min); SIGTERM; du. The parts left
#     (vm_parts) are printed next to the bytes.
# Samples = what the sender reports as sent and acknowledged.
# --downsample: after the compaction, also `gpuwatch downsample --data-dir
#   DIR --downsample.raw-retention R` offline (--raw-retention, default
#   14d): 5 m and 1 h aggregates of every day, raw days older than R
#   dropped; du again ("after downsample") and the aggregates' bytes.
# --systems gpuwatch: leave VictoriaMetrics out (long runs); --systems vm:
#   VictoriaMetrics alone.
#
# Usage: bench/run_compact_bench.sh [--build DIR] [--days 55] [--nodes 8]
#          [--seed 1] [--rw-interval 30s] [--datasets sim,rwload] [--out FILE]
#          [--downsample] [--raw-retention 14d] [--systems gpuwatch,vm]
# Prints a markdown table and writes it to bench/results/compact-<date>.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
days=55
nodes=8
seed=1
rw_interval=30s
datasets="sim,rwload"
out=""
downsample=0
raw_retention=14d
systems="gpuwatch,vm"
cmdline="bench/run_compact_bench.sh $*"

while (($#)); do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --rw-interval) rw_interval=$2; shift 2 ;;
    --datasets) datasets=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --downsample) downsample=1; shift ;;
    --raw-retention) raw_retention=$2; shift 2 ;;
    --systems) systems=$2; shift 2 ;;
    -h | --help) sed -n '2,39p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

build=$(cd "$build" && pwd)
gw="$build/gpuwatch"
load="$build/gw_rwload"
vm=$(command -v victoria-metrics || true)
[[ ",$systems," == *,vm,* ]] || vm=""
[[ -x "$gw" ]] || { echo "gpuwatch not built in $build" >&2; exit 1; }
[[ -n "$out" ]] || out="$root/bench/results/compact-$(date +%Y-%m-%d).md"
mkdir -p "$(dirname "$out")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gw-compact-bench.XXXXXX")
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        sleep 2
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

source "$(dirname "$0")/lib.sh"
wait_ready() { wait_http "$1" "$2" "$server_pid"; }     # URL SECS
stop_server() { stop_pid "$server_pid" "$1"; server_pid=""; }   # SECS
du_b() { du -sb "$1" | awk '{print $1}'; }

end_ms=$(( $(date -u +%s) / 86400 * 86400 * 1000 ))
start_ms=$(( end_ms - days * 86400000 ))

# send DATASET URL -> prints the sample count acknowledged
send() {
    local ds=$1 url=$2 res
    if [[ $ds == sim ]]; then
        res=$("$gw" simulate --profile paper --seed "$seed" --nodes "$nodes" --gpus 8 --days "$days" \
            --start "$start_ms" --interval 30s --connections 4 --batch 2000 --url "$url" 2>>"$tmp/send.err")
        echo "$res" | tail -1 >&2
        [[ "$(field result "$(echo "$res" | tail -1)")" == OK ]] || { echo "send failed" >&2; return 1; }
        field samples "$(echo "$res" | tail -1)"
    else
        res=$("$load" send --url "$url" --nodes "$nodes" --gpus 8 --interval "$rw_interval" --duration "$((days * 24))h" \
            --start "$start_ms" --seed "$seed" --conns 4 --batch 2000 2>&1 | tail -3)
        echo "$res" >&2
        local n
        n=$(echo "$res" | grep -o 'acked=[0-9]*' | head -1 | cut -d= -f2)
        [[ -n "$n" ]] || n=$(echo "$res" | grep -o 'samples=[0-9]*' | head -1 | cut -d= -f2)
        echo "$n"
    fi
}

rows=()
run_gpuwatch() { # DATASET
    local ds=$1 port dir
    port=$(free_port)
    dir="$tmp/gw-$ds"
    "$gw" serve --listen "127.0.0.1:$port" --data-dir "$dir" --compact.schedule off --retention 400d \
        --downsample.interval 0 --no-detectors >"$tmp/gw-$ds.log" 2>&1 &
    server_pid=$!
    wait_ready "http://127.0.0.1:$port/-/ready" 60 || { tail "$tmp/gw-$ds.log" >&2; return 1; }
    echo "== gpuwatch $ds: sending" >&2
    local t0=$SECONDS samples
    samples=$(send "$ds" "http://127.0.0.1:$port/api/v1/write")
    curl -s --max-time 3600 -X POST "http://127.0.0.1:$port/api/v1/admin/flush" >/dev/null
    stop_server 600
    local before after t1
    before=$(du_b "$dir")
    t1=$SECONDS
    "$gw" compact --data-dir "$dir" --json >"$tmp/gw-$ds.compact.json" 2>"$tmp/gw-$ds.compact.err"
    after=$(du_b "$dir")
    echo "gpuwatch $ds: samples=$samples before=$before after=$after send+flush_s=$((t1 - t0)) compact_s=$((SECONDS - t1))" >&2
    cat "$tmp/gw-$ds.compact.json" >&2
    gw_samples[$ds]=$samples
    gw_before[$ds]=$before
    gw_after[$ds]=$after
    gw_compact_s[$ds]=$((SECONDS - t1))
    gw_summary[$ds]=$(cat "$tmp/gw-$ds.compact.json")
    if ((downsample)); then
        local t2=$SECONDS
        "$gw" downsample --data-dir "$dir" --downsample.raw-retention "$raw_retention" \
            >"$tmp/gw-$ds.ds.out" 2>"$tmp/gw-$ds.ds.err"
        gw_ds[$ds]="$(du_b "$dir") $((SECONDS - t2)) $(head -2 "$tmp/gw-$ds.ds.out" | tr '\n' ' ')"
        echo "gpuwatch $ds after downsample: ${gw_ds[$ds]}" >&2
    fi
    rm -rf "$dir"
}

run_vm() { # DATASET
    local ds=$1 port dir
    if [[ -z "$vm" ]]; then
        [[ ",$systems," != *,vm,* ]] || echo "victoria-metrics not installed" >&2
        vm_bytes[$ds]=""
        return 0
    fi
    port=$(free_port)
    dir="$tmp/vm-$ds"
    "$vm" -storageDataPath "$dir" -httpListenAddr "127.0.0.1:$port" -retentionPeriod 100y \
        >"$tmp/vm-$ds.log" 2>&1 &
    server_pid=$!
    wait_ready "http://127.0.0.1:$port/health" 60 || { tail "$tmp/vm-$ds.log" >&2; return 1; }
    echo "== victoria-metrics $ds: sending" >&2
    local samples
    samples=$(send "$ds" "http://127.0.0.1:$port/api/v1/write")
    curl -s --max-time 600 "http://127.0.0.1:$port/internal/force_flush" >/dev/null || true
    curl -s --max-time 3600 "http://127.0.0.1:$port/internal/force_merge" >/dev/null || true
    local prev=-1 cur same=0 active deadline=$((SECONDS + 5400))
    while ((SECONDS < deadline && same < 3)); do
        sleep 10
        cur=$(du_b "$dir")
        active=$(curl -s --max-time 10 "http://127.0.0.1:$port/metrics" |
            awk '/^vm_active_(force_)?merges/ { s += $NF } END { print s + 0 }')
        if [[ "$cur" == "$prev" && "$active" == 0 ]]; then same=$((same + 1)); else same=0; fi
        prev=$cur
    done
    vm_parts[$ds]=$(curl -s --max-time 10 "http://127.0.0.1:$port/metrics" |
        awk -F'[{}"= ]+' '/^vm_parts\{/ { printf "%s%s=%s", sep, $3, $NF; sep = " " }')
    echo "victoria-metrics $ds: merges idle after $((SECONDS - deadline + 5400)) s of waiting; parts: ${vm_parts[$ds]}" >&2
    stop_server 300
    vm_samples[$ds]=$samples
    vm_bytes[$ds]=$(du_b "$dir")
    echo "victoria-metrics $ds: samples=$samples bytes=${vm_bytes[$ds]}" >&2
    rm -rf "$dir"
}

declare -A gw_samples gw_before gw_after gw_compact_s gw_summary gw_ds vm_samples vm_bytes vm_parts
IFS=',' read -r -a ds_list <<<"$datasets"
for ds in "${ds_list[@]}"; do
    if [[ ",$systems," == *,gpuwatch,* ]]; then
        run_gpuwatch "$ds"
    else
        gw_samples[$ds]=0 gw_before[$ds]=0 gw_after[$ds]=0 gw_compact_s[$ds]=0
    fi
    run_vm "$ds"
    if [[ "${gw_samples[$ds]}" == 0 ]]; then
        rows+=("$(awk -v ds="$ds" -v vs="${vm_samples[$ds]}" -v vb="${vm_bytes[$ds]}" 'BEGIN {
            printf "| %s | - | - | - | %d | %.3f | - | - |", ds, vs, vb / vs }')")
    elif [[ -n "${vm_bytes[$ds]}" ]]; then
        rows+=("$(awk -v ds="$ds" -v gs="${gw_samples[$ds]}" -v gb="${gw_before[$ds]}" -v ga="${gw_after[$ds]}" \
            -v vs="${vm_samples[$ds]}" -v vb="${vm_bytes[$ds]}" -v cs="${gw_compact_s[$ds]}" 'BEGIN {
            printf "| %s | %d | %.3f | %.3f | %d | %.3f | %.2fx | %d |", ds, gs, gb / gs, ga / gs, vs, vb / vs,
                (ga / gs) / (vb / vs), cs }')")
    else
        rows+=("$(awk -v ds="$ds" -v gs="${gw_samples[$ds]}" -v gb="${gw_before[$ds]}" -v ga="${gw_after[$ds]}" \
            -v cs="${gw_compact_s[$ds]}" 'BEGIN {
            printf "| %s | %d | %.3f | %.3f | - | - | - | %d |", ds, gs, gb / gs, ga / gs, cs }')")
    fi
done

{
    echo "# Compaction benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "Command: \`$cmdline\`"
    echo
    echo "Machine: $(nproc) cores, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), shared with other jobs; sender on the same machine."
    echo "Data: $days whole UTC days ending $(date -u -d "@$((end_ms / 1000))" +%Y-%m-%dT%H:%MZ), $nodes nodes x 8 GPUs. sim = \`gpuwatch simulate --profile paper --seed $seed --nodes $nodes --interval 30s\`; rwload = \`gw_rwload send --nodes $nodes --gpus 8 --interval $rw_interval --seed $seed\`."
    echo "gpuwatch: source commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "?")$(git -C "$root" diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || echo " + uncommitted changes"); victoria-metrics $(dpkg-query -W -f '${Version}' victoria-metrics 2>/dev/null || echo "?")."
    echo
    echo "| dataset | samples | gpuwatch B/sample before compact | gpuwatch B/sample after | VM samples | VM B/sample | gpuwatch after / VM | compact s |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Bytes = du -sb of the whole data dir (gpuwatch: LMDB store, WAL, alert log; VictoriaMetrics: data, indexdb, cache) after flush/merges and a clean stop."
    echo
    for ds in "${ds_list[@]}"; do
        [[ -z "${gw_summary[$ds]:-}" ]] || { echo "gpuwatch compact summary ($ds): \`${gw_summary[$ds]}\`"; echo; }
        [[ -z "${vm_parts[$ds]:-}" ]] || { echo "VictoriaMetrics parts left ($ds, vm_parts): ${vm_parts[$ds]}"; echo; }
    done
    if ((downsample)); then
        echo "Downsampling (raw retention $raw_retention), per dataset: bytes of the data dir after it, seconds, and gpuwatch downsample's report:"
        echo
        for ds in "${ds_list[@]}"; do
            read -r b secs rest <<<"${gw_ds[$ds]}"
            echo "* $ds: $b bytes ($(awk -v b="$b" -v s="${gw_samples[$ds]}" 'BEGIN { printf "%.3f", b / s }') B per sample sent), ${secs} s: $rest"
        done
        echo
    fi
} | tee "$out"
echo "written to $out" >&2
