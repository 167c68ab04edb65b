#!/usr/bin/env bash
# run_ingest_bench.sh - remote-write ingest benchmark: gpuwatch vs
# VictoriaMetrics vs Prometheus (each one that is installed), same data
# from `gpuwatch simulate` (default: the paper profile's 63 nodes x 8 GPUs
# of dcgm-exporter + node_exporter series with sessions, checkpoints and
# failures, 15 s interval, 1 simulated hour ending 5 min ago, fixed seed,
# sent as remote write 1.0 over 4 keep-alive connections in lockstep).
# A --dry-run of the same simulation first counts series and samples and
# measures the generator + encoder alone (samples/s on one core).
#
# Per system, on a fresh data dir: wall time and samples/s of the send,
# server CPU microseconds per sample (utime+stime from /proc/PID/stat over
# the send and the flush), peak RSS (VmHWM), RSS after the send per active
# series, and on-disk bytes per sample after flushing: gpuwatch POST
# /api/v1/admin/flush then SIGTERM; VictoriaMetrics /internal/force_flush, 5 s, then
# SIGTERM once its data dir stopped shrinking (merges done); Prometheus SIGTERM (its head stays in the WAL, not compacted
# blocks - its size is reported as is and flagged in the notes).
#
# Usage: bench/run_ingest_bench.sh [--build DIR] [--profile paper] [--seed 1]
#          [--nodes 63] [--gpus 8] [--duration 1h] [--interval 15s] [--conns 4]
#          [--batch 2000] [--systems gpuwatch,gpuwatch-no-detectors,gpuwatch-no-d7,gpuwatch-forward,victoria-metrics,prometheus] [--out FILE]
# gpuwatch runs with its detectors (the default); gpuwatch-no-detectors is the same
# serve with --no-detectors, so the two rows give the detectors' share of ingest CPU;
# gpuwatch-no-d7 runs every detector but D7 (checkpoint I/O), for D7's share.
# gpuwatch-forward is gpuwatch with --forward to a VictoriaMetrics of its own
# (started for the run): its CPU counts until every sample was forwarded
# (gpuwatch_forward_pending_bytes 0), so the difference to the gpuwatch row
# is what forwarding costs per sample (the destination's own CPU not counted).
# Quick run: bench/run_ingest_bench.sh --duration 10m
# Prints a markdown table and writes it to bench/results/ingest-<date>.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
profile=paper
seed=1
nodes=63
gpus=8
duration=1h
interval=15s
conns=4
batch=2000
systems="gpuwatch,gpuwatch-no-detectors,victoria-metrics,prometheus"
out=""

while (($#)); do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --systems) systems=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

build=$(cd "$build" && pwd)
sim="$build/gpuwatch"
[[ -x "$sim" ]] || { echo "gpuwatch not built in $build" >&2; exit 1; }
[[ -n "$out" ]] || out="$root/bench/results/ingest-$(date +%Y-%m-%d).md"
mkdir -p "$(dirname "$out")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gw-ingest-bench.XXXXXX")
server_pid=""
fwd_pid=""
cleanup() {
    local p
    for p in "$server_pid" "$fwd_pid"; do
        if [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; then
            kill -KILL "$p" 2>/dev/null || true
            wait "$p" 2>/dev/null || true
        fi
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

clk_tck=$(getconf CLK_TCK)
source "$(dirname "$0")/lib.sh"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
wait_ready() { wait_http "$1" "$2" "$server_pid"; }     # URL SECS
stop_server() { stop_pid "$server_pid" "$1"; server_pid=""; }   # SECS

rows=()
# One simulated hour ending 5 minutes ago, aligned to the interval; the same
# start for every system, so every system gets byte-identical requests.
interval_ms=$(python3 -c 'import re,sys
m = re.fullmatch(r"(\d+)(ms|s|m|h)", sys.argv[1]) or sys.exit("bad --interval " + sys.argv[1])
print(int(m[1]) * {"ms": 1, "s": 1000, "m": 60000, "h": 3600000}[m[2]])' "$interval")
duration_ms=$(python3 -c 'import re,sys
tot = 0
for n, u in re.findall(r"(\d+)(ms|s|m|h|d)", sys.argv[1]):
    tot += int(n) * {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000}[u]
print(tot)' "$duration")
start_ms=$(( ($(date +%s) - 300) * 1000 - duration_ms ))
start_ms=$(( start_ms - start_ms % interval_ms ))
sim_args=(--profile "$profile" --seed "$seed" --nodes "$nodes" --gpus "$gpus" --duration "$duration"
    --interval "$interval" --start "$start_ms")
info=$("$sim" simulate "${sim_args[@]}" --dry-run)
n_series=$(field series "$info")
n_samples=$(field samples "$info")
gen_rate=$(field samples_per_s "$info")
echo "workload: $nodes nodes x $gpus GPUs, $n_series series, $n_samples samples ($duration at $interval); generator alone: $gen_rate samples/s" >&2

run_one() {
    local sys=$1 bin port dir ready flush_note=""
    port=$(free_port)
    dir="$tmp/$sys"
    rm -rf "$dir" "$tmp/fwd-vm"     # a system listed twice starts fresh too
    mkdir -p "$dir"
    local url="http://127.0.0.1:$port/api/v1/write"
    case "$sys" in
    gpuwatch | gpuwatch-no-detectors | gpuwatch-no-d7 | gpuwatch-forward)
        bin="$build/gpuwatch"
        [[ -x "$bin" ]] || { echo "skip gpuwatch: not built" >&2; return 0; }
        local det_flag=()
        [[ $sys == gpuwatch-no-detectors ]] && det_flag=(--no-detectors)
        if [[ $sys == gpuwatch-forward ]]; then
            local vm fport
            vm=$(command -v victoria-metrics || true)
            [[ -n "$vm" ]] || { echo "skip gpuwatch-forward: victoria-metrics not installed" >&2; return 0; }
            fport=$(free_port)
            "$vm" -storageDataPath "$tmp/fwd-vm" -httpListenAddr "127.0.0.1:$fport" -retentionPeriod 100y \
                >"$tmp/fwd-vm.log" 2>&1 &
            fwd_pid=$!
            wait_http "http://127.0.0.1:$fport/health" 60 "$fwd_pid" || { echo "forward destination did not start" >&2; return 1; }
            det_flag=(--forward "http://127.0.0.1:$fport/api/v1/write")
        fi
        if [[ $sys == gpuwatch-no-d7 ]]; then
            printf 'd7 = off\n' >"$tmp/no-d7.conf"
            det_flag=(--detector-config "$tmp/no-d7.conf")
        fi
        "$bin" serve --listen "127.0.0.1:$port" --data-dir "$dir" "${det_flag[@]}" >"$tmp/$sys.log" 2>&1 &
        ready="http://127.0.0.1:$port/-/ready"
        ;;
    victoria-metrics)
        bin=$(command -v victoria-metrics || true)
        [[ -n "$bin" ]] || { echo "skip victoria-metrics: not installed" >&2; return 0; }
        "$bin" -storageDataPath "$dir" -httpListenAddr "127.0.0.1:$port" -retentionPeriod 100y \
            -search.disableCache >"$tmp/$sys.log" 2>&1 &
        ready="http://127.0.0.1:$port/health"
        ;;
    prometheus)
        bin=$(command -v prometheus || true)
        [[ -n "$bin" ]] || { echo "skip prometheus: not installed" >&2; return 0; }
        printf 'global:\n  scrape_interval: 1m\n' >"$tmp/prom.yml"
        "$bin" --config.file="$tmp/prom.yml" --storage.tsdb.path="$dir" --web.listen-address="127.0.0.1:$port" \
            --web.enable-remote-write-receiver --storage.tsdb.retention.time=100y >"$tmp/$sys.log" 2>&1 &
        ready="http://127.0.0.1:$port/-/ready"
        flush_note="head in WAL, not compacted"
        ;;
    *) echo "unknown system $sys" >&2; return 1 ;;
    esac
    server_pid=$!
    if ! wait_ready "$ready" 60; then
        echo "$sys did not become ready; log:" >&2
        tail -20 "$tmp/$sys.log" >&2
        stop_server 10
        rows+=("| $sys | - | - | - | - | - | - | - | - | did not start |")
        return 0
    fi
    local cpu0 cpu1 res
    cpu0=$(cpu_ticks "$server_pid")
    echo "== $sys: sending" >&2
    res=$("$sim" simulate "${sim_args[@]}" --url "$url" --connections "$conns" --batch "$batch" || true)
    echo "$res" >&2
    local hwm rss
    rss=$(status_kb "$server_pid" VmRSS)
    if [[ "$sys" == victoria-metrics ]]; then
        # VictoriaMetrics acks before its in-memory parts are merged: count the flush too.
        curl -s --max-time 60 "http://127.0.0.1:$port/internal/force_flush" >/dev/null || true
        sleep 5
    fi
    if [[ "$sys" == gpuwatch* ]]; then
        # Count the work of writing the head into the store (block encoding) too.
        curl -s --max-time 300 -X POST "http://127.0.0.1:$port/api/v1/admin/flush" >/dev/null || true
    fi
    if [[ "$sys" == gpuwatch-forward ]]; then
        # ... and the forwarding of every sample (it may trail the send).
        local t_fwd=$SECONDS pend=""
        while ((SECONDS - t_fwd < 600)); do
            pend=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics" |
                awk '/^gpuwatch_forward_pending_bytes/ {v = $2} END {print v}' || true)
            [[ "$pend" == 0 ]] && break
            sleep 0.5
        done
        local fwd_ticks
        fwd_ticks=$(for t in /proc/"$server_pid"/task/*; do
            if [[ "$(cat "$t/comm" 2>/dev/null)" == gw-forward ]]; then awk '{print $14 + $15}' "$t/stat"; fi
        done | awk '{s += $1} END {print s + 0}' || true)
        flush_note=$(awk -v t="$fwd_ticks" -v tck="$clk_tck" -v n="$n_samples" -v w="$((SECONDS - t_fwd))" -v p="$pend" \
            'BEGIN {printf "forwarded all %d s after the send (pending %s); forward thread %.2f µs/sample", w, p, t / tck * 1e6 / n}')
    fi
    cpu1=$(cpu_ticks "$server_pid")
    hwm=$(status_kb "$server_pid" VmHWM)
    local samples elapsed rate result
    samples=$(field samples "$res")
    elapsed=$(field elapsed_s "$res")
    rate=$(field samples_per_s "$res")
    result=$(field result "$res")
    [[ -n "$samples" && "$samples" != 0 ]] || samples=1
    if [[ "$sys" == victoria-metrics ]]; then
        # Let its background merges finish: wait until the data dir stops
        # shrinking (checked every 2 s, at most 120 s).
        local prev=-1 cur same=0 deadline=$((SECONDS + 120))
        while ((SECONDS < deadline && same < 3)); do
            cur=$(du -sb "$dir" | awk '{print $1}')
            if [[ "$cur" == "$prev" ]]; then same=$((same + 1)); else same=0; fi
            prev=$cur
            sleep 2
        done
    fi
    stop_server 300
    if [[ -n "$fwd_pid" ]]; then
        stop_pid "$fwd_pid" 60
        fwd_pid=""
    fi
    local bytes
    bytes=$(du -sb "$dir" | awk '{print $1}')
    local note="${result:-no result}"
    [[ -z "$flush_note" ]] || note="$note; $flush_note"
    rows+=("$(awk -v sys="$sys" -v s="$samples" -v el="$elapsed" -v rate="$rate" -v dt="$((cpu1 - cpu0))" \
        -v tck="$clk_tck" -v hwm="$hwm" -v rss="$rss" -v ns="$n_series" -v b="$bytes" -v note="$note" 'BEGIN {
        printf "| %s | %d | %.1f | %.0f | %.2f | %.0f | %.0f | %.0f | %.2f | %s |", sys, s, el, rate,
            dt / tck * 1e6 / s, hwm / 1024, rss / 1024, rss * 1024 / ns, b / s, note }')")
}

IFS=',' read -r -a sys_list <<<"$systems"
for s in "${sys_list[@]}"; do
    run_one "$s"
done

{
    echo "# Ingest benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "Machine: $(nproc) cores, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM; sender on the same machine."
    echo "Workload: gpuwatch simulate --profile $profile --seed $seed, $nodes nodes x $gpus GPUs, $n_series series, $duration at $interval = $n_samples samples, --connections $conns --batch $batch (remote write 1.0, snappy). Generator + encoder alone (--dry-run, one core): $gen_rate samples/s."
    echo "gpuwatch: $("$build/gpuwatch" version 2>/dev/null | head -1 || true), source commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "?")$(git -C "$root" diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || echo " + uncommitted changes")."
    echo "Versions: $(prometheus --version 2>/dev/null | head -1 || true); victoria-metrics $(dpkg-query -W -f '${Version}' victoria-metrics 2>/dev/null || echo "?")."
    echo
    echo "| system | samples acked | wall s | samples/s | server CPU µs/sample | peak RSS MiB | RSS after send MiB | RSS bytes/series | disk bytes/sample | notes |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "CPU = utime+stime of the server process during the send plus its flush (VictoriaMetrics: /internal/force_flush; gpuwatch: POST /api/v1/admin/flush, which encodes the whole head into stored blocks) / samples acked; Prometheus' later head compaction is not counted. RSS after send = VmRSS right after the last sample was acked; per series = that / series. Disk = data dir after flush and stop / samples acked (includes WAL, index, metadata and, for VictoriaMetrics, its cache dir)."
} | tee "$out"
echo "written to $out" >&2
