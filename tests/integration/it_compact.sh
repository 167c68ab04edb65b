#!/usr/bin/env bash
# it_compact.sh - `gpuwatch compact` end to end: a backdated smoke
# simulation (several UTC days) is remote-written to `gpuwatch serve`
# (--compact.schedule off), then
#   1. answers are recorded: every series' count_over_time and
#      sum_over_time over the whole run (one query per metric family), a
#      raw range-vector dump of a DCGM and a node_exporter family, query_range of a rate and a
#      gauge, and /api/v1/series;
#   2. `gpuwatch compact` is run while serve runs (handed over HTTP):
#      finished days are re-encoded, answers are byte-identical, a second
#      run does nothing;
#   3. serve is stopped and `gpuwatch compact` runs offline (compacting
#      copy of the LMDB file): the file does not grow past its size before
#      the online run, and after a restart the answers are byte-identical.
#
# Usage: bash it_compact.sh <build_dir>
# Env: GW_IT_COMPACT_HOURS (default 60), GW_IT_COMPACT_NODES (default 2).
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"

hours=${GW_IT_COMPACT_HOURS:-60}
nodes=${GW_IT_COMPACT_NODES:-2}
interval_ms=60000
end_ms=$(( ($(date +%s) - 300) * 1000 ))
end_ms=$(( end_ms - end_ms % interval_ms ))
start_ms=$(( end_ms - hours * 3600000 ))
port=$(gw_free_port)
gw="http://127.0.0.1:$port"
data="$GW_TMP/gwdata"

gw_start_gpuwatch gw "$port" "$data" --compact.schedule off
gw_log "simulate smoke --nodes $nodes --duration ${hours}h (backdated) -> gpuwatch :$port"
"$GW_BIN" simulate --profile smoke --seed 5 --nodes "$nodes" --duration "${hours}h" --start "$start_ms" \
    --interval 60s --connections 2 --batch 4000 --url "$gw/api/v1/write" >"$GW_TMP/sim.out" 2>"$GW_TMP/sim.err" ||
    { cat "$GW_TMP/sim.out" "$GW_TMP/sim.err" >&2; gw_fail "simulate failed"; }
cat "$GW_TMP/sim.out" >&2
sleep 3   # settled windows reach the store (the flusher runs every second)

answers() {   # $1: output file
    python3 - "$gw" "$((start_ms / 1000))" "$((end_ms / 1000 + 60))" "$1" <<'PY'
import json, sys, urllib.error, urllib.parse, urllib.request
base, start, end, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
span = "%ds" % (end - start + 60)
def get(path, **params):
    try:
        with urllib.request.urlopen(base + path + "?" + urllib.parse.urlencode(params), timeout=300) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        sys.exit("%s %s: %d %s" % (path, params.get("query", ""), e.code, e.read().decode()[:300]))
sel = '{__name__=~".+",__name__!="ALERTS",__name__!~"gpuwatch_.*"}'
res = []
names = [n for n in json.loads(get("/api/v1/label/__name__/values"))["data"]
         if n != "ALERTS" and not n.startswith("gpuwatch_")]
for name in names:   # *_over_time drop the name: one family per query
    res.append(get("/api/v1/query", query="count_over_time(%s[%s])" % (name, span), time=end))
    res.append(get("/api/v1/query", query="sum_over_time(%s[%s])" % (name, span), time=end))
res.append(get("/api/v1/query", query='DCGM_FI_DEV_GPU_TEMP[%s]' % span, time=end))
res.append(get("/api/v1/query", query='node_load1[%s]' % span, time=end))
res.append(get("/api/v1/query_range", query="sum by (hostname) (rate(node_cpu_seconds_total[5m]))",
               start=start, end=end, step=300))
res.append(get("/api/v1/query_range", query="max by (hostname) (DCGM_FI_DEV_POWER_USAGE)",
               start=start + 7 * 3600 + 17, end=end - 3 * 3600, step=120))
res.append(get("/api/v1/series", **{"match[]": sel, "start": start, "end": end}))
for r in res:
    j = json.loads(r)
    if j.get("status") != "success":
        sys.exit("query failed: " + r[:300])
n = sum(len(json.loads(r)["data"]["result"]) for r in res[0:2 * len(names):2])
if n < 100:
    sys.exit("only %d series answered" % n)
with open(out, "w") as f:
    f.write("\n".join(res))
print(n)
PY
}

file_bytes() {
    "$GW_BIN" stats --data-dir "$data" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["store_file_bytes"])'
}

n=$(answers "$GW_TMP/before.txt") || gw_fail "cannot record the answers before compaction"
file0=$(file_bytes)
gw_log "before: $n series answered, store file $file0 bytes"

gw_log "gpuwatch compact (online, handed to serve)"
"$GW_BIN" compact --data-dir "$data" >"$GW_TMP/c1.out" 2>"$GW_TMP/c1.err" ||
    { cat "$GW_TMP/c1.out" "$GW_TMP/c1.err" >&2; gw_fail "online compact failed"; }
cat "$GW_TMP/c1.out" >&2
python3 - "$GW_TMP/c1.out" <<'PY' || gw_fail "online compaction did nothing"
import json, sys
d = json.loads(open(sys.argv[1]).read())["data"]
assert d["days"] >= 1 and d["nodeDays"] >= 1 and d["blobsAfter"] < d["blobsBefore"], d
assert d["bytesAfter"] <= d["bytesBefore"], d
PY
answers "$GW_TMP/after1.txt" >/dev/null || gw_fail "cannot record the answers after the online compaction"
cmp -s "$GW_TMP/before.txt" "$GW_TMP/after1.txt" || gw_fail "answers differ after the online compaction"
gw_log "online: answers identical; store file $(file_bytes) bytes"

"$GW_BIN" compact --data-dir "$data" >"$GW_TMP/c2.out" 2>"$GW_TMP/c2.err" || gw_fail "second online compact failed"
python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read())["data"]; assert d["nodeDays"]==0, d' \
    "$GW_TMP/c2.out" || gw_fail "a second run re-encoded again: $(cat "$GW_TMP/c2.out")"

gw_stop gw 60 || gw_fail "serve did not stop cleanly"
gw_log "gpuwatch compact (offline, with the compacting copy)"
"$GW_BIN" compact --data-dir "$data" --json >"$GW_TMP/c3.out" 2>"$GW_TMP/c3.err" ||
    { cat "$GW_TMP/c3.out" "$GW_TMP/c3.err" >&2; gw_fail "offline compact failed"; }
cat "$GW_TMP/c3.out" >&2
file2=$(file_bytes)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["file_copied"], d' "$GW_TMP/c3.out" ||
    gw_fail "offline compact made no compacting copy"
((file2 <= file0)) || gw_fail "store file grew: $file0 -> $file2 bytes"
[[ ! -e "$data/store/data.mdb.compact" ]] || gw_fail "temp copy left behind"

gw_start_gpuwatch gw "$port" "$data" --compact.schedule off
answers "$GW_TMP/after2.txt" >/dev/null || gw_fail "cannot record the answers after the offline compaction"
cmp -s "$GW_TMP/before.txt" "$GW_TMP/after2.txt" || gw_fail "answers differ after the offline compaction"
gw_log "PASS: answers identical after online and offline compaction; store file $file0 -> $file2 bytes"
