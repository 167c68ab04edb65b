#!/usr/bin/env bash
# run_longrange_bench.sh - 30-day dashboard panels on downsampled data:
# gpuwatch (after `downsample`) vs VictoriaMetrics holding identical data.
#
# Data: gw_rwload send --jobs dcgm (dcgm-exporter shaped series only: 47
# per GPU, labels hostname/gpu/UUID/...), NODES nodes x 8 GPUs, DAYS days
# ending at the start of the current UTC hour, one scrape per INTERVAL,
# values bit-identical for both receivers (pure functions of series and
# time). Each system is loaded in turn; the load rate is printed so the
# run can be sized honestly for the machine.
#
# gpuwatch: serve --downsample.interval 0 (no background run), then after
# the load POST /api/v1/admin/flush and `gpuwatch downsample --data-dir`
# (handed to the serve over POST /api/v1/admin/downsample) with
# --downsample.raw-retention 0, so raw data stays for the equality check.
# VictoriaMetrics (Debian package) runs on a free 127.0.0.1 port with its
# own data dir, -search.disableCache -search.latencyOffset=0s, stopped by
# PID at the end.
#
# Panels (Grafana-style POST /api/v1/query_range, start and end floored
# to the step): 30 days at 1 h step of
#   avg by (hostname) (DCGM_FI_DEV_GPU_TEMP)
#   max_over_time(DCGM_FI_DEV_GPU_TEMP[1h])
# One warm-up run, then RUNS timed runs per system (wall time of request
# and whole answer); median and p90. gpuwatch is also timed with
# max_source_resolution=raw, and its default answers must equal its raw
# answers exactly (same JSON result).
#
# Usage: bench/run_longrange_bench.sh [--build DIR] [--nodes 8] [--days 30]
#          [--interval 15s] [--runs 5] [--out FILE] [--load-only]
#          [--systems gpuwatch,vm]   (gpuwatch alone: no VictoriaMetrics rows)
set -euo pipefail

cmdline="bench/run_longrange_bench.sh $*"
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
nodes=8
days=30
interval=15s
runs=5
out=""
load_only=0
while (($#)); do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --load-only) load_only=1; shift ;;
    --systems) systems=$2; shift 2 ;;
    -h | --help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
[[ -x "$build/gw_rwload" && -x "$build/gpuwatch" ]] || { echo "build gpuwatch and gw_rwload first" >&2; exit 1; }
with_vm=1
[[ ",${systems:-gpuwatch,vm}," == *,vm,* ]] || with_vm=0
vm=$(command -v victoria-metrics || true)
[[ -n "$vm" || $with_vm == 0 ]] || { echo "victoria-metrics is not installed" >&2; exit 1; }
[[ -n "$out" ]] || out="$root/bench/results/longrange-$(date -u +%Y-%m-%d).md"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gw-longrange.XXXXXX")
declare -A pid port
cleanup() {
    for s in "${!pid[@]}"; do kill -TERM "${pid[$s]}" 2>/dev/null || true; done
    for s in "${!pid[@]}"; do
        local deadline=$((SECONDS + 60))
        while kill -0 "${pid[$s]}" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
        kill -KILL "${pid[$s]}" 2>/dev/null || true
        wait "${pid[$s]}" 2>/dev/null || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

source "$(dirname "$0")/lib.sh"
wait_ready() { wait_http "$2" "$3" "${pid[$1]}"; }   # SYSTEM URL SECS

p=$(free_port); port[gpuwatch]=$p
mkdir -p "$tmp/gpuwatch" "$tmp/vm"
"$build/gpuwatch" serve --listen "127.0.0.1:$p" --data-dir "$tmp/gpuwatch" --retention 100d \
    --downsample.interval 0 --no-detectors >"$tmp/gpuwatch.log" 2>&1 &
pid[gpuwatch]=$!
wait_ready gpuwatch "http://127.0.0.1:$p/-/ready" 60 || { tail "$tmp/gpuwatch.log" >&2; exit 1; }
systems_run=(gpuwatch)
port[vm]=0
if ((with_vm)); then
    systems_run+=(vm)
    p=$(free_port); port[vm]=$p
    "$vm" -storageDataPath "$tmp/vm" -httpListenAddr "127.0.0.1:$p" -retentionPeriod 100y \
        -search.latencyOffset=0s -search.disableCache -loggerLevel=ERROR >"$tmp/vm.log" 2>&1 &
    pid[vm]=$!
    wait_ready vm "http://127.0.0.1:$p/health" 60 || { tail "$tmp/vm.log" >&2; exit 1; }
fi

# The data ends at the start of the current UTC hour.
t_end=$(( $(date +%s) / 3600 * 3600 * 1000 ))
dur_s=$(awk -v d="$days" 'BEGIN { printf "%d", d * 86400 }')
t_start=$(( t_end - dur_s * 1000 ))
notes=()
for s in "${systems_run[@]}"; do
    t0=$(date +%s.%N)
    res=$("$build/gw_rwload" send --url "http://127.0.0.1:${port[$s]}/api/v1/write" --nodes "$nodes" --gpus 8 \
        --jobs dcgm --hostname-label hostname --duration "${dur_s}s" --interval "$interval" --start "$t_start" \
        --conns 2 --batch 4000 --retry-for 300s --quiet)
    t1=$(date +%s.%N)
    n=$(tr ' ' '\n' <<<"$res" | awk -F= '$1 == "samples" {print $2}')
    notes+=("$(awk -v s="$s" -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s: %d samples in %.0f s (%.0f samples/s)", s, n, b - a, n / (b - a) }')")
    echo "${notes[-1]}" >&2
done
if ((load_only)); then exit 0; fi

((with_vm == 0)) || curl -s --max-time 120 "http://127.0.0.1:${port[vm]}/internal/force_flush" >/dev/null || true
t0=$(date +%s.%N)
curl -s -X POST --max-time 600 "http://127.0.0.1:${port[gpuwatch]}/api/v1/admin/flush" >/dev/null
t1=$(date +%s.%N)
ds_out=$("$build/gpuwatch" downsample --data-dir "$tmp/gpuwatch" --downsample.raw-retention 0)
t2=$(date +%s.%N)
echo "$ds_out" >&2
flush_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
ds_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
sleep 5

cat >"$tmp/bench.py" <<'PYEOF'
import http.client, json, statistics, sys, time, urllib.parse
gw, vm, t_end, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
step = 3600
end = t_end // 1000 // step * step
start = (end - 30 * 86400) // step * step
panels = [("avg by (hostname) (DCGM_FI_DEV_GPU_TEMP)", "avg by (hostname) (DCGM_FI_DEV_GPU_TEMP)"),
          ("max_over_time(DCGM_FI_DEV_GPU_TEMP[1h])", "max_over_time(DCGM_FI_DEV_GPU_TEMP[1h])")]
conns = {}
def post(base, form):
    u = urllib.parse.urlparse(base)
    c = conns.get(base)
    if c is None:
        c = conns[base] = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    body = urllib.parse.urlencode(form)
    t = time.perf_counter()
    c.request("POST", "/api/v1/query_range", body, {"Content-Type": "application/x-www-form-urlencoded"})
    r = c.getresponse()
    data = r.read()
    dt = time.perf_counter() - t
    if r.status != 200:
        raise SystemExit("%s answered %d: %s" % (base, r.status, data[:300]))
    return dt, json.loads(data)
def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    f = int(k)
    return xs[f] + (xs[min(f + 1, len(xs) - 1)] - xs[f]) * (k - f)
def timed(base, q, extra):
    form = dict(query=q, start=start, end=end, step=step, **extra)
    _, ans = post(base, form)          # warm-up
    ts = []
    for _ in range(runs):
        dt, ans = post(base, form)
        ts.append(dt * 1000)
    return ts, ans
def points(ans):
    return sum(len(s["values"]) for s in ans["data"]["result"]), len(ans["data"]["result"])
def key(m):   # __name__ aside: MetricsQL and PromQL differ in keeping it
    return tuple(sorted((k, v) for k, v in m.items() if k != "__name__"))
def close(a, b):
    x = {key(s["metric"]): s["values"] for s in a["data"]["result"]}
    y = {key(s["metric"]): s["values"] for s in b["data"]["result"]}
    if set(x) != set(y):
        return "label sets differ (%d vs %d series)" % (len(x), len(y))
    bad = tot = 0
    for k in x:
        dx, dy = dict((t, v) for t, v in x[k]), dict((t, v) for t, v in y[k])
        for t in set(dx) | set(dy):
            tot += 1
            if t not in dx or t not in dy or abs(float(dx[t]) - float(dy[t])) > 1e-9 * max(1, abs(float(dx[t]))):
                bad += 1
    return "equal" if bad == 0 else "%d of %d points differ" % (bad, tot)
print("| panel | system | median ms | p90 ms | series | points | answer |")
print("|---|---|---:|---:|---:|---:|---|")
for qgw, qvm in panels:
    tg, ag = timed(gw, qgw, {})
    tr, ar = timed(gw, qgw, {"max_source_resolution": "raw"})
    eq = "identical to raw" if ag["data"]["result"] == ar["data"]["result"] else "DIFFERS from raw"
    rows = [("gpuwatch (aggregates)", tg, ag, eq), ("gpuwatch (max_source_resolution=raw)", tr, ar, "-")]
    if vm != "-":
        tv, av = timed(vm, qvm, {})
        rows.append(("VictoriaMetrics", tv, av, "vs gpuwatch raw: " + close(ar, av)))
    for name, ts, ans, note in rows:
        n, s = points(ans)
        print("| `%s` | %s | %.1f | %.1f | %d | %d | %s |" % (qgw, name, statistics.median(ts), pct(ts, 0.9), s, n, note))
print()
print("Range: start=%d end=%d step=%ds (30 days, floored to the step)." % (start, end, step))
PYEOF
vm_url=-
((with_vm == 0)) || vm_url="http://127.0.0.1:${port[vm]}"
table=$(python3 "$tmp/bench.py" "http://127.0.0.1:${port[gpuwatch]}" "$vm_url" "$t_end" "$runs")
echo "$table"

gw_bytes=$(du -sb "$tmp/gpuwatch" | cut -f1)
vm_bytes=$(du -sb "$tmp/vm" | cut -f1)
((with_vm)) || vm_bytes="- (not run)"
mkdir -p "$(dirname "$out")"
{
    echo "# Long-range panels on downsampled data, $(date -u +%Y-%m-%d)"
    echo
    echo "Command: \`$cmdline\`"
    echo
    echo "Machine: $(nproc) cores, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), shared with other work; client on the same machine."
    echo "Data: gw_rwload --jobs dcgm (dcgm-exporter shaped, 47 series per GPU), $nodes nodes x 8 GPUs, $days days at $interval, ending $(date -u -d @$((t_end / 1000)) +%FT%TZ)."
    for n in "${notes[@]}"; do echo "Load: $n."; done
    echo "gpuwatch: flush ${flush_s} s, downsample ${ds_s} s: $ds_out"
    echo "Disk after the run: gpuwatch $gw_bytes bytes (raw kept + aggregates), VictoriaMetrics $vm_bytes bytes."
    echo "gpuwatch source commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || echo " + uncommitted changes"); VictoriaMetrics $(dpkg-query -W -f '${Version}' victoria-metrics 2>/dev/null || echo "?") (-search.disableCache -search.latencyOffset=0s)."
    echo
    echo "$table"
} >"$out"
echo "wrote $out" >&2
