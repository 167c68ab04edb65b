#!/usr/bin/env bash
# it_simulate.sh - `gpuwatch simulate` end to end: the same smoke
# simulation (the whole smoke profile: 4 nodes x 8 GPUs, 1 day, fixed seed and start) is
# remote-written to `gpuwatch serve` and to a real Prometheus 2.42
# receiver (--web.enable-remote-write-receiver); then
#   1. both runs wrote byte-identical ground truth and sent the same
#      number of samples (determinism);
#   2. both servers hold the same series (/api/v1/series over the run);
#   3. raw samples are identical in both for DCGM, node_exporter and
#      scrape-meta selectors at three times (label sets, timestamps as
#      numbers, value strings exactly; a timestamp written differently in
#      the JSON is reported as a note), and query_range answers are equal
#      (promcompare.py range);
#   4. the ground truth is valid JSON lines with the documented fields and
#      agrees with the data, in both servers: for every failure whose XID
#      became visible inside the run, the node's (and, when the truth names
#      one, the GPU's) DCGM_FI_DEV_XID_ERRORS{err_code="<xid>"} shows <xid>
#      at the first scrape after t_xid_visible (+1 s jitter), and, for the
#      first failure with that code in the run, never before its fault.
# A raised --failure-scale makes failures with visible XIDs happen within
# the run (the smoke profile expects about 0.05 hardware failures a day).
#
# Usage: bash it_simulate.sh <build_dir>
# Needs prometheus (GW_ALLOW_SKIP=1 to skip when missing).
# Env: GW_IT_SIM_HOURS (default 12), GW_IT_SIM_SEED (default 9),
#      GW_IT_SIM_FAILURE_SCALE (default 40).
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"
gw_require_bin prometheus

hours=${GW_IT_SIM_HOURS:-12}
seed=${GW_IT_SIM_SEED:-9}
scale=${GW_IT_SIM_FAILURE_SCALE:-40}
interval_ms=30000
end_ms=$(( ($(date +%s) - 120) * 1000 ))
end_ms=$(( end_ms - end_ms % interval_ms ))
start_ms=$(( end_ms - hours * 3600000 ))
gw_port=$(gw_free_port)
pr_port=$(gw_free_port)
gw="http://127.0.0.1:$gw_port"
pr="http://127.0.0.1:$pr_port"
cmp=(python3 "$GW_IT_DIR/promcompare.py")

gw_start_gpuwatch gw "$gw_port" "$GW_TMP/gwdata"
printf 'global:\n  scrape_interval: 1m\n' >"$GW_TMP/prom.yml"
gw_start prom "$GW_TMP/prom.log" prometheus --config.file="$GW_TMP/prom.yml" --web.enable-remote-write-receiver \
    --storage.tsdb.path="$GW_TMP/promdata" --web.listen-address="127.0.0.1:$pr_port" \
    --storage.tsdb.retention.time=100y
gw_wait_http prom "$pr/-/ready" 60

sim=("$GW_BIN" simulate --profile smoke --seed "$seed" --duration "${hours}h" --start "$start_ms"
    --failure-scale "$scale" --connections 4 --batch 2000)
gw_log "simulate --seed $seed --duration ${hours}h --failure-scale $scale -> gpuwatch :$gw_port"
"${sim[@]}" --url "$gw/api/v1/write" --truth "$GW_TMP/truth_gw.jsonl" >"$GW_TMP/sim_gw.out" 2>"$GW_TMP/sim_gw.err" ||
    { cat "$GW_TMP/sim_gw.out" "$GW_TMP/sim_gw.err" >&2; gw_fail "simulate -> gpuwatch failed"; }
gw_log "simulate -> prometheus :$pr_port"
"${sim[@]}" --url "$pr/api/v1/write" --truth "$GW_TMP/truth_pr.jsonl" >"$GW_TMP/sim_pr.out" 2>"$GW_TMP/sim_pr.err" ||
    { cat "$GW_TMP/sim_pr.out" "$GW_TMP/sim_pr.err" >&2; gw_fail "simulate -> prometheus failed"; }
cat "$GW_TMP/sim_gw.out" >&2

# 1. determinism
cmp -s "$GW_TMP/truth_gw.jsonl" "$GW_TMP/truth_pr.jsonl" || gw_fail "the two runs wrote different ground truth"
samples_gw=$(grep -o ' samples=[0-9]*' "$GW_TMP/sim_gw.out" | head -1)
samples_pr=$(grep -o ' samples=[0-9]*' "$GW_TMP/sim_pr.out" | head -1)
[[ -n "$samples_gw" && "$samples_gw" == "$samples_pr" ]] ||
    gw_fail "sample counts differ: gpuwatch$samples_gw prometheus$samples_pr"
gw_log "both runs: identical truth ($(wc -l <"$GW_TMP/truth_gw.jsonl") lines),$samples_gw"

failed=0
s_start=$((start_ms / 1000))
s_end=$((end_ms / 1000 + 60))

# 2. the same series in both (Prometheus is the reference)
python3 - "$pr" "$gw" "$s_start" "$s_end" <<'PY' || failed=1
import json, sys, time, urllib.parse, urllib.request
ref, got, start, end = sys.argv[1:5]
def series(base):
    # gpuwatch's own series (its detectors' ALERTS, the checkpoint events' gpuwatch_checkpoint_*, D8's gpuwatch_node_activity)
    # are not part of the sent data
    q = urllib.parse.urlencode({"match[]": '{__name__=~".+",__name__!="ALERTS",__name__!~"gpuwatch_checkpoint_.*|gpuwatch_node_activity"}',
                                "start": start, "end": end})
    with urllib.request.urlopen(base + "/api/v1/series?" + q, timeout=60) as r:
        doc = json.load(r)
    return {tuple(sorted(m.items())) for m in doc["data"]}
a = series(ref)
deadline = time.time() + 60
while True:
    b = series(got)
    if a == b or time.time() > deadline:
        break
    time.sleep(1)
if not a or a != b:
    print("FAIL series: prometheus %d, gpuwatch %d; only in prometheus: %s; only in gpuwatch: %s"
          % (len(a), len(b), sorted(a - b)[:3], sorted(b - a)[:3]))
    sys.exit(1)
print("OK series: %d series, the same label sets in both" % len(a))
PY

# 3. raw samples at three times, then query_range
times=""
for frac in 0.25 0.6 1.0; do
    times+=" $(python3 -c "print('%.3f' % ($start_ms / 1000 + $frac * $hours * 3600 + 0.5))")"
done
python3 - "$pr" "$gw" "$times" <<'PY' || failed=1
import json, sys, time, urllib.parse, urllib.request
ref, got, times = sys.argv[1], sys.argv[2], sys.argv[3].split()
queries = ['{__name__=~"DCGM_FI_DEV_.*"}[5m]', '{job="dcgm",__name__=~"DCGM_FI_PROF_.*|DCGM_EXP_.*"}[5m]',
           '{job="node",__name__=~"node_(cpu|intr|procs|vmstat|memory|load|boot|time|uname|context|forks).*"}[3m]',
           '{__name__=~"node_(mountstats|nfs|infiniband|network|filesystem)_.*"}[3m]',
           '{__name__=~"up|scrape_.*"}[10m]']
def fetch(base, q, t):
    u = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": t})
    with urllib.request.urlopen(u, timeout=60) as r:
        doc = json.loads(r.read().decode(), parse_float=str, parse_int=str)
    out, text = {}, {}
    for s in doc["data"]["result"]:
        k = tuple(sorted(s["metric"].items()))
        pts = []
        for ts, v in s["values"]:
            ms = int(round(float(ts) * 1000))
            pts.append((ms, v))
            text[(k, ms)] = ts
        out[k] = pts
    return out, text
bad = notes = 0
for t in times:
    for q in queries:
        a, ta = fetch(ref, q, t)
        if not a:
            print("FAIL raw %s @%s: Prometheus returned no series" % (q, t))
            bad += 1
            continue
        deadline = time.time() + 30
        while True:
            b, tb = fetch(got, q, t)
            if a == b or time.time() > deadline:
                break
            time.sleep(1)
        if a != b:
            bad += 1
            print("FAIL raw %s @%s: prometheus %d series, gpuwatch %d" % (q, t, len(a), len(b)))
            shown = 0
            for k in sorted(set(a) | set(b)):
                if a.get(k) != b.get(k) and shown < 5:
                    ra, rb = set(a.get(k, [])), set(b.get(k, []))
                    print("  %s: only in prometheus %s, only in gpuwatch %s"
                          % (dict(k), sorted(ra - rb)[:3], sorted(rb - ra)[:3]))
                    shown += 1
            continue
        diff = [(ta[x], tb[x]) for x in ta if ta[x] != tb.get(x)]
        notes += len(diff)
        n = sum(len(v) for v in a.values())
        extra = ""
        if diff:
            extra = " (%d timestamps written differently, e.g. prometheus %s, gpuwatch %s)" % (len(diff), diff[0][0], diff[0][1])
        print("OK raw %s @%s: %d series, %d samples equal%s" % (q, t, len(a), n, extra))
if notes:
    print("NOTE: %d sample timestamps are equal as numbers but written differently in the JSON "
          "(Prometheus always writes 3 fraction digits: 1795972768.690)" % notes)
sys.exit(1 if bad else 0)
PY
for q in DCGM_FI_DEV_GPU_TEMP DCGM_FI_DEV_XID_ERRORS node_mountstats_nfs_operations_queue_time_seconds_total up; do
    "${cmp[@]}" range --ref "$pr" --got "$gw" --query "$q" --start "$s_start" --end "$((end_ms / 1000))" \
        --step 120 --wait 30 || failed=1
done

# 4. the ground truth: valid JSON lines, and visible XIDs in the data
python3 - "$GW_TMP/truth_gw.jsonl" "$pr" "$gw" "$start_ms" "$end_ms" "$interval_ms" <<'PY' || failed=1
import json, sys, urllib.parse, urllib.request
path, ref, got = sys.argv[1], sys.argv[2], sys.argv[3]
start_ms, end_ms, interval_ms = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
need = {"failure": ["id", "class", "node", "gpu", "xid", "action", "precursor", "t_precursor_start", "t_fault",
                    "t_xid_visible", "t_recovered"],
        "session": ["id", "chain", "attempt", "t_start", "t_end", "outcome"],
        "checkpoint": ["id", "session", "phase", "t_start", "t_end", "bytes"],
        "bait": ["id", "kind", "node", "t_start", "t_end"]}
counts, bad, failures = {}, 0, []
with open(path) as f:
    for n, line in enumerate(f, 1):
        try:
            o = json.loads(line)
        except ValueError as e:
            print("FAIL truth line %d is not JSON: %s: %.100s" % (n, e, line))
            bad += 1
            continue
        t = o.get("type")
        counts[t] = counts.get(t, 0) + 1
        missing = [k for k in need.get(t, ["known type"]) if k not in o]
        if missing:
            print("FAIL truth line %d (type %s) lacks %s" % (n, t, missing))
            bad += 1
        if t == "failure":
            failures.append(o)
print("truth: %s" % ", ".join("%s=%d" % kv for kv in sorted(counts.items())))
if bad or not counts.get("failure") or not counts.get("session"):
    print("FAIL truth: %d bad lines, failures=%d sessions=%d" % (bad, counts.get("failure", 0), counts.get("session", 0)))
    sys.exit(1)

def raw(base, sel):
    """every sample of sel over the run: {series labels: [(t_ms, value)]}"""
    q = "%s[%ds]" % (sel, (end_ms - start_ms) // 1000 + 600)
    u = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": "%.3f" % (end_ms / 1000 + 300)})
    with urllib.request.urlopen(u, timeout=60) as r:
        doc = json.load(r)
    return {tuple(sorted(s["metric"].items())): [(round(float(ts) * 1000), float(v)) for ts, v in s["values"]]
            for s in doc["data"]["result"]}

checked, seen_code = 0, set()
for f in sorted(failures, key=lambda x: x["t_fault"]):
    tv, xid, gpu, node = f.get("t_xid_visible"), f.get("xid"), f.get("gpu"), f["node"]
    first = xid not in seen_code   # a collective names one node but shows on others too
    seen_code.add(xid)
    if tv is None or not xid or not (start_ms <= tv < end_ms - 2 * interval_ms):
        continue
    sel = 'DCGM_FI_DEV_XID_ERRORS{hostname="%s",err_code="%d"%s}' % (node, xid, "" if gpu is None else ',gpu="%d"' % gpu)
    for name, base in (("prometheus", ref), ("gpuwatch", got)):
        data = raw(base, sel)
        shown = []
        for k, pts in data.items():
            after = [p for p in pts if p[0] > tv + 1000]
            if after and after[0][1] == float(xid):
                shown.append((dict(k).get("gpu"), after[0][0]))
            early = [p for p in pts if p[0] < f["t_fault"] - interval_ms - 1000 and p[1] == float(xid)]
            if first and early:
                print("FAIL truth failure %d (%s, xid %d on %s): %s shows it at %d, before the fault at %d"
                      % (f["id"], f["class"], xid, node, name, early[0][0], f["t_fault"]))
                sys.exit(1)
        if not shown:
            print("FAIL truth failure %d (%s, xid %d on %s gpu %s, visible %d): %s has no %s showing %d after it (series: %s)"
                  % (f["id"], f["class"], xid, node, gpu, tv, name, sel, xid,
                     {dict(k).get("gpu"): [p for p in v if p[0] > tv - 90000][:4] for k, v in data.items()}))
            sys.exit(1)
    print("OK truth failure %d: class=%s xid=%d on %s gpu %s, visible from %d: shown by gpu(s) %s at the next scrape in both servers"
          % (f["id"], f["class"], xid, node, gpu, tv, ",".join(sorted(str(g) for g, _ in shown))))
    checked += 1
if checked == 0:
    print("FAIL truth: no failure with a visible XID inside the run to check (raise GW_IT_SIM_FAILURE_SCALE)")
    sys.exit(1)
print("OK truth: %d failure(s) with a visible XID agree with DCGM_FI_DEV_XID_ERRORS in both servers" % checked)
PY

((failed == 0)) || gw_fail "gpuwatch and Prometheus differ, or the truth disagrees with the data (see above)"
gw_stop prom 30 || true
gw_stop gw 60 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS"
