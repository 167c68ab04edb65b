#!/usr/bin/env bash
# it_alerts_replay.sh - the detectors run on data time: the same data sent in
# a different arrival order gives the same alerts. Two `gpuwatch serve`
# instances receive the same smoke simulation (1 simulated day, failure
# scale 40): one over 4 keep-alive connections in 2,000-sample requests, the
# other over 1 connection in 300-sample requests (series interleaved
# differently, scrapes split across requests at other places). Then
#   1. both hold the same ALERTS series (alertname, alertstate, hostname,
#      gpu, detector, class, action, ...) and each series starts and ends
#      at the same data time within one scrape interval (a structural
#      detector judges a scrape when it is evaluated, and a scrape that
#      arrives in pieces can be judged one evaluation later); for alerts
#      still active at the end of the data only the start is compared;
#   2. there is at least one firing alert, and each injected hardware failure
#      of the truth that falls inside the day has an alert on its node.
#
# Usage: bash it_alerts_replay.sh <build_dir>
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"

seed=${GW_IT_REPLAY_SEED:-2}
interval_ms=30000
end_ms=$(( ($(date +%s) - 120) * 1000 ))
end_ms=$(( end_ms - end_ms % interval_ms ))
start_ms=$(( end_ms - 24 * 3600000 ))

run_one() { # run_one NAME CONNECTIONS BATCH
    local name=$1 conns=$2 batch=$3 port
    port=$(gw_free_port)
    gw_start_gpuwatch "$name" "$port" "$GW_TMP/$name"
    gw_log "$name: simulate --connections $conns --batch $batch"
    "$GW_BIN" simulate --profile smoke --seed "$seed" --failure-scale 40 --start "$start_ms" --duration 24h \
        --connections "$conns" --batch "$batch" --url "http://127.0.0.1:$port/api/v1/write" \
        --truth "$GW_TMP/truth.jsonl" >"$GW_TMP/$name.sim" 2>&1 ||
        { cat "$GW_TMP/$name.sim" >&2; gw_fail "$name: simulate failed"; }
    sleep 3   # serve appends ALERTS samples every second
    # every ALERTS series: its labels, sample count, first and last sample time
    curl -fsS --max-time 60 "http://127.0.0.1:$port/api/v1/query_range" \
        --data-urlencode "query=ALERTS" --data-urlencode "start=$(( start_ms / 1000 ))" \
        --data-urlencode "end=$(( end_ms / 1000 + 600 ))" --data-urlencode "step=30" \
        >"$GW_TMP/$name.alerts.json" || gw_fail "$name: query_range failed"
    gw_stop "$name"
}

run_one a 4 2000
run_one b 1 300

python3 - "$GW_TMP/a.alerts.json" "$GW_TMP/b.alerts.json" "$GW_TMP/truth.jsonl" "$start_ms" "$end_ms" <<'PY' ||
import json, sys
def load(p):
    d = json.load(open(p))
    assert d["status"] == "success", d
    out = {}
    for s in d["data"]["result"]:
        m = s["metric"]
        key = tuple(sorted(m.items()))
        ts = [float(v[0]) for v in s["values"]]
        out[key] = (len(ts), min(ts), max(ts))
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
start, end = int(sys.argv[4]), int(sys.argv[5])
# alerts still active at the end of the data: only their start is compared
# (their newest samples depend on when the last request came in)
for d in (a, b):
    for k, v in list(d.items()):
        if v[2] * 1000 >= end - 10 * 60000:
            d[k] = ("active at the end", v[1])
if not a:
    sys.exit("no ALERTS series at all")
def close(x, y):
    if x[0] == "active at the end" or y[0] == "active at the end":
        return x[0] == y[0] and abs(x[1] - y[1]) <= 30
    return abs(x[1] - y[1]) <= 30 and abs(x[2] - y[2]) <= 30
if set(a) != set(b) or any(not close(a[k], b[k]) for k in a):
    only_a = sorted(set(a) - set(b)); only_b = sorted(set(b) - set(a))
    diff = [k for k in set(a) & set(b) if not close(a[k], b[k])]
    for k in only_a[:5]: print("only in 4-connection run:", dict(k), a[k], file=sys.stderr)
    for k in only_b[:5]: print("only in 1-connection run:", dict(k), b[k], file=sys.stderr)
    for k in diff[:5]: print("differs:", dict(k), a[k], b[k], file=sys.stderr)
    sys.exit("%d/%d ALERTS series differ between arrival orders" % (len(only_a) + len(only_b) + len(diff), len(a)))
firing = {dict(k).get("hostname") for k in a if dict(k).get("alertstate") == "firing"}
if not firing:
    sys.exit("no firing alert")
hw = [r for r in map(json.loads, open(sys.argv[3]))
      if r.get("type") == "failure" and r["class"] not in ("collective", "app_xid")
      and start + 3600000 < r["t_fault"] < end - 600000]
missed = [r for r in hw if r["node"] not in firing]
for r in hw:
    print("failure %s on %s: %s" % (r["class"], r["node"], "alerted" if r not in missed else "NO ALERT"),
          file=sys.stderr)
if missed:
    sys.exit("%d of %d injected hardware failures without an alert on their node" % (len(missed), len(hw)))
exact = sum(1 for k in a if a[k] == b[k])
print("%d ALERTS series in both arrival orders (%d identical, the rest within one interval);" % (len(a), exact), file=sys.stderr)
print("%d ALERTS series the same in both arrival orders; %d nodes with firing alerts; %d/%d failures alerted"
      % (len(a), len(firing), len(hw) - len(missed), len(hw)), file=sys.stderr)
PY
    gw_fail "alerts differ or are missing"
gw_log "PASS"
