#!/usr/bin/env bash
# it_alerts_replay.sh - alerts depend on the data, never on its arrival.
#
# One smoke simulation (failure scale 40, the series the detectors read) is
# sent to a fresh `gpuwatch serve` three times (GW_IT_REPLAY_RUNS), each time in another random
# sharding of the simulator's remote-write output (--shard-seed: series
# spread over the connections by a seeded hash, random batch sizes,
# connections up to --max-skew scrapes apart in data time, about 1 % of the
# requests sent twice). serve runs with a lateness of 150 s, so shards up to
# three 30 s scrapes apart are waited for. Then
#   1. the raw ALERTS samples of all runs are byte-identical (same
#      series, labels, timestamps and values, stale markers included);
#   2. there is a firing alert, and each injected hardware failure of the
#      truth inside the window has an alert on its node.
#
# Usage: bash it_alerts_replay.sh <build_dir>
#   GW_IT_REPLAY_DAYS   simulated days (default 1; `make test-replay-week` uses 7)
#   GW_IT_REPLAY_RUNS   shardings (default 5)
#   GW_IT_REPLAY_SEED   simulation seed (default 2)
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"

seed=${GW_IT_REPLAY_SEED:-2}
days=${GW_IT_REPLAY_DAYS:-1}
runs=${GW_IT_REPLAY_RUNS:-3}
interval_ms=30000
end_ms=$(( ($(date +%s) - 120) * 1000 ))
end_ms=$(( end_ms - end_ms % interval_ms ))
start_ms=$(( end_ms - days * 24 * 3600000 ))
printf 'lateness = 150s\n' >"$GW_TMP/detectors.conf"

run_one() { # run_one INDEX
    local i=$1 name="r$1" port
    port=$(gw_free_port)
    gw_start_gpuwatch "$name" "$port" "$GW_TMP/$name" --detector-config "$GW_TMP/detectors.conf"
    gw_log "$name: simulate --shard-seed $i --max-skew 3"
    "$GW_BIN" simulate --profile smoke --seed "$seed" --failure-scale 40 --start "$start_ms" --duration "$(( days * 24 ))h" \
        --only-detector-series --connections 4 --batch 2000 --shard-seed "$i" --max-skew 3 \
        --url "http://127.0.0.1:$port/api/v1/write" --truth "$GW_TMP/truth.jsonl" >"$GW_TMP/$name.sim" 2>&1 ||
        { cat "$GW_TMP/$name.sim" >&2; gw_fail "$name: simulate failed"; }
    sleep 3   # serve appends ALERTS samples every second
    # the raw samples of every ALERTS series
    curl -fsS --max-time 120 "http://127.0.0.1:$port/api/v1/query" \
        --data-urlencode "query=ALERTS[$(( days * 24 + 1 ))h]" --data-urlencode "time=$(( end_ms / 1000 + 600 ))" \
        >"$GW_TMP/$name.alerts.json" || gw_fail "$name: query failed"
    gw_stop "$name"
}

for i in $(seq 1 "$runs"); do run_one "$i"; done

python3 - "$GW_TMP" "$runs" "$start_ms" "$end_ms" <<'PY' ||
import json, sys
tmp, runs, start, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def load(p):
    d = json.load(open(p))
    assert d["status"] == "success", d
    return sorted((json.dumps(s["metric"], sort_keys=True), json.dumps(s["values"])) for s in d["data"]["result"])
ref = load("%s/r1.alerts.json" % tmp)
if not ref:
    sys.exit("no ALERTS series at all")
bad = 0
for i in range(2, runs + 1):
    got = load("%s/r%d.alerts.json" % (tmp, i))
    if got != ref:
        bad += 1
        a, b = dict(ref), dict(got)
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                print("run %d differs on %s:\n  run 1: %s\n  run %d: %s" % (i, k, (a.get(k) or "-")[:300], i,
                      (b.get(k) or "-")[:300]), file=sys.stderr)
if bad:
    sys.exit("%d of %d shardings gave other ALERTS samples than the first" % (bad, runs - 1))
firing = {json.loads(m).get("hostname") for m, _ in ref if json.loads(m).get("alertstate") == "firing"}
if not firing:
    sys.exit("no firing alert")
hw = [r for r in map(json.loads, open("%s/truth.jsonl" % tmp))
      if r.get("type") == "failure" and r["class"] not in ("collective", "app_xid")
      and start + 3600000 < r["t_fault"] < end - 600000]
missed = [r for r in hw if r["node"] not in firing]
for r in hw:
    print("failure %s on %s: %s" % (r["class"], r["node"], "alerted" if r not in missed else "NO ALERT"), file=sys.stderr)
if missed:
    sys.exit("%d of %d injected hardware failures without an alert on their node" % (len(missed), len(hw)))
samples = sum(len(json.loads(v)) for _, v in ref)
print("%d ALERTS series (%d samples) byte-identical over %d shardings; %d nodes with firing alerts; %d/%d failures alerted"
      % (len(ref), samples, runs, len(firing), len(hw) - len(missed), len(hw)), file=sys.stderr)
PY
    gw_fail "alerts differ between shardings or are missing"
gw_log "PASS"
