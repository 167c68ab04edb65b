#!/usr/bin/env bash
# run_query_bench.sh - dashboard query benchmark: gpuwatch vs VictoriaMetrics
# vs Prometheus 2.42 holding the same data, side by side in one run.
#
# Data (gw_rwload, the generator of the ingest bench: dcgm-exporter +
# node_exporter shaped series at 15 s, values bit-identical for every
# receiver), sent by remote write to each system in turn, in time order:
#   1. a long small set: node gpu001 only, from now - LONG_DAYS to now - DAYS
#   2. the cluster: NODES nodes x 8 GPUs for the last DAYS
# so gpu001 has LONG_DAYS of history (the "whole stored range") and the
# cluster DAYS. Defaults: 8 nodes, 1 day, 3 days whole range (about 112 M
# samples per system; the load takes most of the run).
#
# Queries: bench/dashboard_queries.txt (the dcgm-exporter dashboard's panels
# and the busiest Node Exporter Full panels), each as a range query over
# the last 1 hour, 1 day and the whole stored range, the way Grafana sends
# it: POST /api/v1/query_range, step = Grafana's interval (range /
# max data points, rounded to a nice interval, at least the 15 s scrape
# interval), $__rate_interval = max(step + 15s, 60s), start and end floored
# to a multiple of step. One warm-up run, then RUNS timed runs per system
# (wall time of the request and the whole answer); median and p90.
#
# Correctness: every answer of gpuwatch is compared with Prometheus' (same
# series, same timestamps, values within relative 1e-9, NaN equals NaN);
# gpuwatch runs with --promql-compat 2 so its range windows are Prometheus
# 2.42's (the windows do not change its speed). VictoriaMetrics is compared
# the same way and reported; it differs by design (MetricsQL: rate without
# Prometheus' extrapolation, its own lookback for raw selectors).
#
# Fairness: all three run on the same machine, one queried at a time;
# VictoriaMetrics' rollup result cache is disabled (-search.disableCache)
# so repeated runs measure evaluation as they do for the other two, and
# -search.latencyOffset=0 so it returns the newest points too; its
# deduplication is off (the default). Prometheus' head compaction is let
# finish before timing.
#
# Usage: bench/run_query_bench.sh [--build DIR] [--nodes 8] [--days 1]
#          [--long-days 3] [--runs 5] [--max-points 1000]
#          [--systems gpuwatch,victoria-metrics,prometheus] [--out FILE]
# Quick check: bench/run_query_bench.sh --nodes 1 --days 0.125 --long-days 0.25 --runs 2
# Writes bench/results/query-<date>.md (markdown table) and prints it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
nodes=8
days=1
long_days=3
runs=5
max_points=1000
systems="gpuwatch,victoria-metrics,prometheus"
out=""
conns=4
batch=2000

while (($#)); do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --long-days) long_days=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --max-points) max_points=$2; shift 2 ;;
    --systems) systems=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,44p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

build=$(cd "$build" && pwd)
load="$build/gw_rwload"
[[ -x "$load" ]] || { echo "gw_rwload not built in $build" >&2; exit 1; }
[[ -n "$out" ]] || out="$root/bench/results/query-$(date +%Y-%m-%d).md"
mkdir -p "$(dirname "$out")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gw-query-bench.XXXXXX")
declare -A pid port
cleanup() {
    for s in "${!pid[@]}"; do
        if kill -0 "${pid[$s]}" 2>/dev/null; then
            kill -TERM "${pid[$s]}" 2>/dev/null || true
        fi
    done
    for s in "${!pid[@]}"; do
        local deadline=$((SECONDS + 30))
        while kill -0 "${pid[$s]}" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
        kill -KILL "${pid[$s]}" 2>/dev/null || true
        wait "${pid[$s]}" 2>/dev/null || true
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

source "$(dirname "$0")/lib.sh"
wait_ready() { wait_http "$2" "$3" "${pid[$1]}"; }   # SYSTEM URL SECS
secs() { # "1.5" days -> seconds
    awk -v d="$1" 'BEGIN { printf "%d", d * 86400 }'
}

IFS=',' read -r -a sys_list <<<"$systems"
started=()
for s in "${sys_list[@]}"; do
    p=$(free_port)
    dir="$tmp/$s"
    mkdir -p "$dir"
    case "$s" in
    gpuwatch)
        [[ -x "$build/gpuwatch" ]] || { echo "skip gpuwatch: not built" >&2; continue; }
        "$build/gpuwatch" serve --listen "127.0.0.1:$p" --data-dir "$dir" --retention 100d --promql-compat 2 \
            >"$tmp/$s.log" 2>&1 &
        ready="http://127.0.0.1:$p/-/ready"
        ;;
    victoria-metrics)
        bin=$(command -v victoria-metrics || true)
        [[ -n "$bin" ]] || { echo "skip victoria-metrics: not installed" >&2; continue; }
        "$bin" -storageDataPath "$dir" -httpListenAddr "127.0.0.1:$p" -retentionPeriod 100y \
            -search.latencyOffset=0s -search.disableCache -loggerLevel=ERROR >"$tmp/$s.log" 2>&1 &
        ready="http://127.0.0.1:$p/health"
        ;;
    prometheus)
        bin=$(command -v prometheus || true)
        [[ -n "$bin" ]] || { echo "skip prometheus: not installed" >&2; continue; }
        printf 'global:\n  scrape_interval: 15s\n' >"$tmp/prom.yml"
        "$bin" --config.file="$tmp/prom.yml" --storage.tsdb.path="$dir" --web.listen-address="127.0.0.1:$p" \
            --web.enable-remote-write-receiver --storage.tsdb.retention.time=100y >"$tmp/$s.log" 2>&1 &
        ready="http://127.0.0.1:$p/-/ready"
        ;;
    *) echo "unknown system $s" >&2; exit 2 ;;
    esac
    pid[$s]=$!
    port[$s]=$p
    if ! wait_ready "$s" "$ready" 60; then
        echo "$s did not become ready; log:" >&2
        tail -20 "$tmp/$s.log" >&2
        exit 1
    fi
    started+=("$s")
done
((${#started[@]})) || { echo "no system to benchmark" >&2; exit 1; }

# Data: the last scrape lands just before t0 (a whole minute).
t0=$(( $(date +%s) / 60 * 60 * 1000 ))
short_s=$(secs "$days")
long_s=$(secs "$long_days")
((long_s >= short_s)) || long_s=$short_s
loads=()
if ((long_s > short_s)); then
    loads+=("1 $((t0 - long_s * 1000)) $((long_s - short_s))s")
fi
loads+=("$nodes $((t0 - short_s * 1000)) ${short_s}s")

load_notes=()
for s in "${started[@]}"; do
    total=0
    t_start=$(date +%s.%N)
    for l in "${loads[@]}"; do
        read -r n st dur <<<"$l"
        echo "== $s: sending $n node(s) from $st for $dur" >&2
        res=$("$load" send --url "http://127.0.0.1:${port[$s]}/api/v1/write" --nodes "$n" --gpus 8 \
            --duration "$dur" --interval 15s --start "$st" --conns "$conns" --batch "$batch" --retry-for 120s --quiet) || {
            echo "$s: load failed: $res" >&2
            exit 1
        }
        echo "$res" >&2
        total=$((total + $(tr ' ' '\n' <<<"$res" | awk -F= '$1 == "samples" {print $2}')))
    done
    t_end=$(date +%s.%N)
    load_notes+=("$(awk -v s="$s" -v n="$total" -v a="$t_start" -v b="$t_end" \
        'BEGIN { printf "%s %d samples in %.0f s (%.0f samples/s)", s, n, b - a, n / (b - a) }')")
done

# Let each system settle before timing: VictoriaMetrics makes its buffers
# searchable; Prometheus finishes compacting its head; gpuwatch finishes
# moving settled head chunks into the store.
metric_val() { # URL NAME -> summed value of NAME
    curl -s --max-time 10 "$1" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 {s += $2} END {printf "%.0f", s}'
}
settle() { # URL NAME: wait until NAME stays the same for 10 s (at most 10 min)
    local prev=-1 cur same=0 deadline=$((SECONDS + 600))
    while ((SECONDS < deadline && same < 5)); do
        cur=$(metric_val "$1" "$2")
        if [[ "$cur" == "$prev" ]]; then same=$((same + 1)); else same=0; fi
        prev=$cur
        sleep 2
    done
}
for s in "${started[@]}"; do
    case "$s" in
    victoria-metrics)
        curl -s --max-time 120 "http://127.0.0.1:${port[$s]}/internal/force_flush" >/dev/null || true
        settle "http://127.0.0.1:${port[$s]}/metrics" vm_merges_total ;;
    prometheus) settle "http://127.0.0.1:${port[$s]}/metrics" prometheus_tsdb_compactions_total ;;
    gpuwatch) settle "http://127.0.0.1:${port[$s]}/metrics" gpuwatch_db_head_samples ;;
    esac
done

hosts=$(python3 -c "import sys; print('|'.join('gpu%03d:9400' % (i + 1) for i in range(int(sys.argv[1]))))" "$nodes")
sysargs=()
for s in "${started[@]}"; do sysargs+=("$s=http://127.0.0.1:${port[$s]}"); done

meta="$tmp/meta.txt"
{
    echo "Machine: $(nproc) cores, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, shared with other work; client on the same machine."
    echo "Data: gw_rwload, 15 s scrapes: node gpu001 (dcgm-exporter x 8 GPUs + node_exporter) for the last $long_days day(s), $nodes node(s) for the last $days day(s)."
    for n in "${load_notes[@]}"; do echo "Load: $n."; done
    echo "gpuwatch: $("$build/gpuwatch" version 2>/dev/null | head -1 || true), source commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "?")$(git -C "$root" diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || echo " + uncommitted changes"), serve --promql-compat 2."
    echo "Versions: $(prometheus --version 2>/dev/null | head -1 || true); victoria-metrics $(dpkg-query -W -f '${Version}' victoria-metrics 2>/dev/null || echo "?") (-search.disableCache -search.latencyOffset=0s, no dedup)."
} >"$meta"

# The timing client: keep-alive POSTs like Grafana's, wall time per answer.
cat >"$tmp/query_bench.py" <<'PYEOF'
import argparse, http.client, json, math, statistics, sys, time, urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("--queries"); ap.add_argument("--t0", type=int)
ap.add_argument("--short-s", type=int); ap.add_argument("--long-s", type=int)
ap.add_argument("--runs", type=int); ap.add_argument("--max-points", type=int)
ap.add_argument("--instance"); ap.add_argument("--gpu"); ap.add_argument("--node"); ap.add_argument("--job")
ap.add_argument("--meta"); ap.add_argument("--out")
ap.add_argument("systems", nargs="+")
a = ap.parse_args()
systems = [s.split("=", 1) for s in a.systems]
NAMES = {"gpuwatch": "gpuwatch", "victoria-metrics": "VictoriaMetrics", "prometheus": "Prometheus 2.42"}

# Grafana's roundInterval (public/app/core/utils/rangeutil / kbn): the
# interval range/maxDataPoints rounded to a nice value.
NICE = [(0.015, 0.01), (0.035, 0.02), (0.075, 0.05), (0.15, 0.1), (0.35, 0.2), (0.75, 0.5), (1.5, 1), (3.5, 2),
        (7.5, 5), (12.5, 10), (17.5, 15), (25, 20), (45, 30), (90, 60), (210, 120), (450, 300), (750, 600),
        (1050, 900), (1500, 1200), (2700, 1800), (5400, 3600), (9000, 7200), (18000, 10800), (32400, 21600),
        (86400, 43200), (604800, 86400), (1814400, 604800), (3628800, 2592000)]
def round_interval(s):
    for lim, v in NICE:
        if s < lim:
            return v
    return 31536000
def dur(s):
    s = int(s)
    return "%dm" % (s // 60) if s % 60 == 0 and s >= 60 else "%ds" % s

queries = []
for line in open(a.queries):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    qid, panel, expr = [x.strip() for x in line.split("|", 2)]
    queries.append((qid, panel, expr))

t0 = a.t0 // 1000
def rlabel(s):
    return "%gd" % (s / 86400.0) if s >= 86400 else "%.3gh" % (s / 3600.0)
ranges = [("1h", 3600)]
if a.short_s > 3600:
    ranges.append((rlabel(a.short_s), a.short_s))
if a.long_s > a.short_s:
    ranges.append(("whole " + rlabel(a.long_s), a.long_s))

conns = {}
def post(sysname, base, path, form):
    u = urllib.parse.urlparse(base)
    body = urllib.parse.urlencode(form)
    for attempt in range(2):
        c = conns.get(sysname)
        if c is None:
            c = conns[sysname] = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
        try:
            t = time.perf_counter()
            c.request("POST", path, body, {"Content-Type": "application/x-www-form-urlencoded"})
            r = c.getresponse()
            data = r.read()
            return time.perf_counter() - t, r.status, data
        except (http.client.HTTPException, OSError):
            c.close()
            conns.pop(sysname, None)
            if attempt:
                raise

def norm(data):
    try:
        d = json.loads(data)
    except ValueError:
        return None, "not JSON"
    if d.get("status") != "success":
        return None, "%s: %s" % (d.get("errorType"), d.get("error"))
    out = {}
    for s in d["data"]["result"]:
        key = tuple(sorted(s["metric"].items()))
        out[key] = [(round(float(t) * 1000), v) for t, v in s.get("values", [])]
    return out, None

def fval(v):
    return float(v)  # "NaN", "+Inf", "-Inf" parse

def same(x, y, rel):
    """(equal, note) between two normalized matrices."""
    if set(x) != set(y):
        return False, "series %d vs %d, %d label sets differ" % (len(x), len(y), len(set(x) ^ set(y)))
    bad_t = bad_v = 0
    for k in x:
        px, py = x[k], y[k]
        if [t for t, _ in px] != [t for t, _ in py]:
            bad_t += 1
            continue
        for (_, vx), (_, vy) in zip(px, py):
            fx, fy = fval(vx), fval(vy)
            if math.isnan(fx) and math.isnan(fy):
                continue
            if fx == fy:
                continue
            if math.isinf(fx) or math.isinf(fy) or abs(fx - fy) > rel * max(abs(fx), abs(fy)):
                bad_v += 1
    if bad_t or bad_v:
        return False, "%d series with other timestamps, %d values differ" % (bad_t, bad_v)
    return True, ""

def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1))
    return xs[k]

rows = []
summary = {}
for rname, rsec in ranges:
    step = max(15, round_interval(rsec / float(a.max_points)))
    rate_iv = max(step + 15, 60)
    end = (t0 // step) * step
    start = ((t0 - rsec) // step) * step
    for qid, panel, expr in queries:
        q = (expr.replace("$__rate_interval", dur(rate_iv)).replace("$instance", a.instance)
             .replace("$gpu", a.gpu).replace("$node", a.node).replace("$job", a.job))
        form = {"query": q, "start": str(start), "end": str(end), "step": str(step)}
        res = {}
        for sysname, base in systems:
            times, err, result = [], None, None
            for i in range(a.runs + 1):
                try:
                    el, status, data = post(sysname, base, "/api/v1/query_range", form)
                except Exception as e:  # transport failure: reported in the table
                    err = str(e)
                    break
                if status != 200:
                    err = "HTTP %d %s" % (status, data[:200].decode("utf-8", "replace"))
                    break
                if i > 0:
                    times.append(el * 1000.0)
                else:
                    result, nerr = norm(data)
                    if nerr:
                        err = nerr
                        break
            res[sysname] = (times, err, result)
            print("%-16s %-10s %-17s %s" % (qid, rname, sysname,
                  err if err else "median %.1f ms p90 %.1f ms" % (statistics.median(times), pct(times, 90))),
                  file=sys.stderr)
        ref = res.get("prometheus")
        checks = []
        for sysname in ("gpuwatch", "victoria-metrics"):
            if sysname not in res or ref is None or ref[1] or res[sysname][1]:
                continue
            ok, note = same(res[sysname][2], ref[2], 1e-9 if sysname == "gpuwatch" else 1e-6)
            checks.append("%s %s" % ("gw" if sysname == "gpuwatch" else "VM", "=" if ok else "differs (" + note + ")"))
        shape = ""
        any_ok = next((r for r in res.values() if not r[1]), None)
        if any_ok:
            shape = "%d x %d" % (len(any_ok[2]), max((len(v) for v in any_ok[2].values()), default=0))
        cells = []
        for sysname, _ in systems:
            times, err, _r = res[sysname]
            if err:
                cells.append("error")
            else:
                med, p90 = statistics.median(times), pct(times, 90)
                cells.append("%.1f / %.1f" % (med, p90))
                summary.setdefault((rname, sysname), []).append(med)
        gw, vm = res.get("gpuwatch"), res.get("victoria-metrics")
        faster = ""
        if gw and vm and not gw[1] and not vm[1]:
            faster = "%.2fx" % (statistics.median(vm[0]) / statistics.median(gw[0]))
        rows.append("| %s | %s (%s) | %s | %s | %s | %s |" % (qid, rname, dur(step), shape, " | ".join(cells),
                                                             faster, "; ".join(checks)))

with open(a.out, "w") as f:
    def w(s=""):
        f.write(s + "\n")
        print(s)
    w("# Dashboard query benchmark %s" % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    w()
    for line in open(a.meta):
        w(line.rstrip("\n"))
    w("Queries: bench/dashboard_queries.txt, POST /api/v1/query_range as Grafana sends them (max %d data points, "
      "step = Grafana's rounded interval, at least 15 s; start/end floored to the step); %d timed runs after one "
      "warm-up, milliseconds for the whole answer." % (a.max_points, a.runs))
    w()
    w("| query | range (step) | series x points | " + " | ".join("%s median / p90 ms" % NAMES.get(s, s) for s, _ in systems)
      + " | VM / gw median | same numbers as Prometheus |")
    w("|---|---|---|" + "---|" * len(systems) + "---|---|")
    for r in rows:
        w(r)
    w()
    w("Sum of the medians per range (ms):")
    w()
    w("| range | " + " | ".join(NAMES.get(s, s) for s, _ in systems) + " | queries where gpuwatch's median is below VictoriaMetrics' |")
    w("|---|" + "---|" * len(systems) + "---|")
    for rname, _ in ranges:
        cells = []
        for s, _ in systems:
            v = summary.get((rname, s))
            cells.append("%.0f" % sum(v) if v and len(v) == len(queries) else ("%.0f (%d of %d answered)" % (sum(v), len(v), len(queries)) if v else "-"))
        g, vm = summary.get((rname, "gpuwatch")), summary.get((rname, "victoria-metrics"))
        wins = ""
        if g and vm and len(g) == len(vm):
            wins = "%d of %d" % (sum(1 for x, y in zip(g, vm) if x < y), len(g))
        w("| %s | %s | %s |" % (rname, " | ".join(cells), wins))
    w()
    w("\"same numbers\": gw = gpuwatch equals Prometheus (label sets, timestamps, values within relative 1e-9, NaN = NaN); "
      "VM = VictoriaMetrics equals Prometheus within relative 1e-6. VictoriaMetrics differs by design where it does: "
      "MetricsQL's rate/increase do not extrapolate to the window edges and take the sample before the window into "
      "account, and its raw-selector lookback and step alignment are its own.")
PYEOF
python3 "$tmp/query_bench.py" --queries "$root/bench/dashboard_queries.txt" --t0 "$t0" \
    --short-s "$short_s" --long-s "$long_s" --runs "$runs" --max-points "$max_points" \
    --instance "($hosts)" --gpu "(0|1|2|3|4|5|6|7)" --node "gpu001:9100" --job node \
    --meta "$meta" --out "$out" "${sysargs[@]}"
echo "written to $out" >&2
