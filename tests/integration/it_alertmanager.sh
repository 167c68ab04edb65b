#!/usr/bin/env bash
# it_alertmanager.sh - alerts end to end with a real Alertmanager (Debian's
# prometheus-alertmanager): the test starts
#   - a webhook receiver (python3 http.server) that appends every POST body
#     it gets to a file, one JSON document per line;
#   - Alertmanager on 127.0.0.1 (clustering off) routing every alert to
#     that webhook with group_wait/group_interval 1s and send_resolved;
#   - `gpuwatch serve --alertmanager <it>`;
# then remote-writes a smoke simulation (1 simulated day, failure scale 40,
# a seed whose ground truth holds hardware failures that recover within the
# day) and checks that
#   1. the webhook got firing alerts, each with alertname, severity,
#      detector, class and action, hostname on node- and GPU-level ones and
#      a decimal gpu on GPU-level ones; at least one names the node of an
#      injected failure;
#   2. a resolved notification arrived (status "resolved");
#   3. /api/v1/alerts and /api/v1/rules answer in Prometheus' format (keys
#      and their order, types), and a bad rules `type` is 400 bad_data;
#   4. ALERTS{alertstate="firing"} is queryable with /api/v1/query_range;
#   5. after a restart on the same data dir the same alerts are active (same
#      labels, activeAt and state) and Alertmanager is told of no new firing
#      alert.
#
# Usage: bash it_alertmanager.sh <build_dir>
# Needs prometheus-alertmanager (GW_ALLOW_SKIP=1 to skip when missing).
# Env: GW_IT_AM_SEED (default 2), GW_IT_AM_FAILURE_SCALE (default 40).
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"
AM_BIN=${GW_AM_BIN:-/usr/bin/prometheus-alertmanager}
gw_require_bin "$AM_BIN"

seed=${GW_IT_AM_SEED:-2}
scale=${GW_IT_AM_FAILURE_SCALE:-40}
gw_port=$(gw_free_port)
am_port=$(gw_free_port)
hook_port=$(gw_free_port)
gw="http://127.0.0.1:$gw_port"
am="http://127.0.0.1:$am_port"
hook_file="$GW_TMP/webhook.jsonl"
: >"$hook_file"

# --- webhook receiver
cat >"$GW_TMP/webhook.py" <<'PY'
import http.server, json, sys
port, path = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        try:
            line = json.dumps(json.loads(body), separators=(",", ":"))
        except ValueError:
            line = json.dumps({"unparsable": body.decode("utf-8", "replace")})
        with open(path, "a") as f:
            f.write(line + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
gw_start hook "$GW_TMP/hook.log" python3 "$GW_TMP/webhook.py" "$hook_port" "$hook_file"
gw_wait_http hook "http://127.0.0.1:$hook_port/" 20

# --- Alertmanager
cat >"$GW_TMP/am.yml" <<EOF
route:
  receiver: hook
  group_by: ['alertname', 'hostname', 'gpu']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:$hook_port/
        send_resolved: true
EOF
gw_start am "$GW_TMP/am.log" "$AM_BIN" --config.file="$GW_TMP/am.yml" --storage.path="$GW_TMP/amdata" \
    --web.listen-address="127.0.0.1:$am_port" --cluster.listen-address= --log.level=info
gw_wait_http am "$am/-/ready" 30

# --- gpuwatch
gw_start_gpuwatch gw "$gw_port" "$GW_TMP/gwdata" --alertmanager "$am" --web.external-url "$gw"

interval_ms=30000
end_ms=$(( ($(date +%s) - 120) * 1000 ))
end_ms=$(( end_ms - end_ms % interval_ms ))
start_ms=$(( end_ms - 24 * 3600000 ))
gw_log "simulate --seed $seed --failure-scale $scale (1 day) -> gpuwatch :$gw_port, Alertmanager :$am_port"
"$GW_BIN" simulate --profile smoke --seed "$seed" --failure-scale "$scale" --start "$start_ms" --duration 24h \
    --url "$gw/api/v1/write" --truth "$GW_TMP/truth.jsonl" >"$GW_TMP/sim.out" 2>"$GW_TMP/sim.err" ||
    { cat "$GW_TMP/sim.out" "$GW_TMP/sim.err" >&2; gw_fail "simulate failed"; }
cat "$GW_TMP/sim.out" >&2

# Hardware failures of the truth that recover inside the run.
python3 - "$GW_TMP/truth.jsonl" "$end_ms" <<'PY' || gw_fail "seed $seed has no hardware failure that recovers within the day"
import json, sys
end = int(sys.argv[2])
hw = [r for r in map(json.loads, open(sys.argv[1]))
      if r.get("type") == "failure" and r["class"] not in ("collective", "app_xid")
      and r.get("t_recovered") and r["t_recovered"] < end]
for r in hw:
    print("injected: %s on %s gpu %s xid %s, fault %d, recovered %d" %
          (r["class"], r["node"], r["gpu"], r["xid"], r["t_fault"], r["t_recovered"]), file=sys.stderr)
sys.exit(0 if hw else 1)
PY

# --- 1 + 2: webhook notifications (firing, then resolved)
gw_log "waiting for Alertmanager's notifications"
deadline=$((SECONDS + 30))
while ((SECONDS < deadline)); do
    if grep -q '"status":"firing"' "$hook_file" && grep -q '"status":"resolved"' "$hook_file"; then break; fi
    sleep 0.5
done
python3 - "$hook_file" "$GW_TMP/truth.jsonl" <<'PY' || gw_fail "webhook notifications"
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
truth = [json.loads(l) for l in open(sys.argv[2])]
alerts = [a for d in docs for a in d.get("alerts", [])]
firing = [a for a in alerts if a.get("status") == "firing"]
resolved = [a for a in alerts if a.get("status") == "resolved"]
print("webhook: %d notifications, %d firing and %d resolved alert entries" % (len(docs), len(firing), len(resolved)),
      file=sys.stderr)
bad = []
if not firing:
    bad.append("no firing alert reached the webhook")
for a in firing + resolved:
    l = a.get("labels", {})
    for k in ("alertname", "severity", "detector", "class", "action"):
        if not l.get(k):
            bad.append("alert without %s: %s" % (k, l))
    if l.get("severity") not in ("critical", "warning", "info"):
        bad.append("bad severity: %s" % l)
    if "gpu" in l:
        if not l["gpu"].isdigit():
            bad.append("gpu label not decimal: %s" % l)
        if not l.get("hostname"):
            bad.append("GPU-level alert without hostname: %s" % l)
    if not a.get("startsAt") or not a.get("endsAt"):
        bad.append("alert without startsAt/endsAt: %s" % a)
    if not a.get("generatorURL", "").startswith("http://127.0.0.1:"):
        bad.append("generatorURL: %s" % a.get("generatorURL"))
if not any(a["labels"].get("hostname") for a in firing):
    bad.append("no firing alert names a node")
names = sorted({(a["labels"]["alertname"], a["labels"].get("hostname", ""), a["labels"].get("gpu", "")) for a in firing})
for n in names[:20]:
    print("  firing: %s host=%s gpu=%s" % n, file=sys.stderr)
failed_nodes = {r["node"] for r in truth if r.get("type") == "failure"}
if not any(a["labels"].get("hostname") in failed_nodes for a in firing):
    bad.append("no alert names the node of an injected failure (%s)" % sorted(failed_nodes))
if not resolved:
    bad.append("no resolved notification")
for b in bad[:20]:
    print("FAIL: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# --- 3: the Prometheus API shapes
curl -sf "$gw/api/v1/alerts" >"$GW_TMP/alerts.json" || gw_fail "/api/v1/alerts"
curl -sf "$gw/api/v1/rules" >"$GW_TMP/rules.json" || gw_fail "/api/v1/rules"
curl -sf "$gw/api/v1/rules?type=record" >"$GW_TMP/rules_record.json" || gw_fail "/api/v1/rules?type=record"
code=$(gw_http_code GET "$gw/api/v1/rules?type=bogus")
[[ "$code" == 400 ]] || gw_fail "/api/v1/rules?type=bogus answered $code, want 400"
grep -q '"errorType":"bad_data"' "$GW_TMP/last_body" || gw_fail "/api/v1/rules?type=bogus: $(cat "$GW_TMP/last_body")"
python3 - "$GW_TMP/alerts.json" "$GW_TMP/rules.json" "$GW_TMP/rules_record.json" <<'PY' || gw_fail "API shapes"
import json, sys
def load(p):
    return json.load(open(p), object_pairs_hook=lambda kv: kv)
def obj(kv):
    return dict(kv)
bad = []
alerts = load(sys.argv[1])
if [k for k, _ in alerts] != ["status", "data"] or obj(alerts)["status"] != "success":
    bad.append("alerts envelope: %s" % [k for k, _ in alerts])
data = obj(obj(alerts)["data"])
alert_keys = ["labels", "annotations", "state", "activeAt", "value"]
for a in data.get("alerts", []):
    keys = [k for k, _ in a]
    if keys != alert_keys:
        bad.append("alert keys %s" % keys)
    d = obj(a)
    if d["state"] not in ("pending", "firing"):
        bad.append("alert state %s" % d["state"])
    if "e" not in d["value"] and d["value"] not in ("NaN", "+Inf", "-Inf"):
        bad.append("alert value %s" % d["value"])
print("/api/v1/alerts: %d active alerts" % len(data.get("alerts", [])), file=sys.stderr)
rules = load(sys.argv[2])
groups = obj(obj(rules)["data"])["groups"]
if not groups:
    bad.append("/api/v1/rules: no groups")
group_keys = ["name", "file", "rules", "interval", "limit", "evaluationTime", "lastEvaluation"]
rule_keys = ["state", "name", "query", "duration", "keepFiringFor", "labels", "annotations", "alerts", "health",
             "evaluationTime", "lastEvaluation", "type"]
n_rules = 0
for g in groups:
    if [k for k, _ in g] != group_keys:
        bad.append("group keys %s" % [k for k, _ in g])
    for r in obj(g)["rules"]:
        n_rules += 1
        if [k for k, _ in r] != rule_keys:
            bad.append("rule keys %s" % [k for k, _ in r])
        d = obj(r)
        if d["type"] != "alerting" or d["health"] not in ("ok", "unknown", "err"):
            bad.append("rule type/health %s %s" % (d["type"], d["health"]))
        if d["state"] not in ("inactive", "pending", "firing"):
            bad.append("rule state %s" % d["state"])
        for a in d["alerts"]:
            if [k for k, _ in a] != alert_keys:
                bad.append("rule alert keys %s" % [k for k, _ in a])
print("/api/v1/rules: %d groups, %d rules" % (len(groups), n_rules), file=sys.stderr)
rec = json.load(open(sys.argv[3]))
if rec != {"status": "success", "data": {"groups": []}}:
    bad.append("type=record: %s" % rec)
for b in bad[:20]:
    print("FAIL: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# --- 4: ALERTS series (appended by serve every second)
sleep 2
python3 - "$gw" "$((start_ms / 1000))" "$((end_ms / 1000 + 600))" <<'PY' || gw_fail "ALERTS series"
import json, sys, urllib.parse, urllib.request
base, start, end = sys.argv[1:4]
q = urllib.parse.urlencode({"query": 'ALERTS{alertstate="firing"}', "start": start, "end": end, "step": "60"})
with urllib.request.urlopen(base + "/api/v1/query_range?" + q, timeout=60) as r:
    doc = json.load(r)
res = doc["data"]["result"]
print("ALERTS{alertstate=\"firing\"}: %d series, %d points" % (len(res), sum(len(s["values"]) for s in res)),
      file=sys.stderr)
ok = doc["status"] == "success" and res and all(
    s["metric"].get("__name__") == "ALERTS" and s["metric"].get("alertname") and s["values"] for s in res)
sys.exit(0 if ok else 1)
PY

# --- 5: a restart neither loses nor re-fires alerts
curl -sf "$gw/api/v1/alerts" >"$GW_TMP/alerts_before.json" || gw_fail "/api/v1/alerts"
hook_lines=$(wc -l <"$hook_file")
gw_stop gw 30 || gw_fail "gpuwatch serve did not stop cleanly"
[[ -s "$GW_TMP/gwdata/detect.state" ]] || gw_fail "no detector state saved at shutdown"
gw_port2=$(gw_free_port)
gw_start_gpuwatch gw2 "$gw_port2" "$GW_TMP/gwdata" --alertmanager "$am" --web.external-url "$gw"
curl -sf "http://127.0.0.1:$gw_port2/api/v1/alerts" >"$GW_TMP/alerts_after.json" || gw_fail "/api/v1/alerts after restart"
sleep 4   # the notifier sends the reloaded alerts; Alertmanager must see nothing new
python3 - "$GW_TMP/alerts_before.json" "$GW_TMP/alerts_after.json" "$hook_file" "$hook_lines" <<'PY' || gw_fail "restart"
import json, sys
def key(a):
    return (json.dumps(a["labels"], sort_keys=True), a["activeAt"], a["state"])
before = {key(a) for a in json.load(open(sys.argv[1]))["data"]["alerts"]}
after = {key(a) for a in json.load(open(sys.argv[2]))["data"]["alerts"]}
bad = []
if before != after:
    bad.append("active alerts changed across the restart: lost %d, new %d" % (len(before - after), len(after - before)))
lines = open(sys.argv[3]).read().splitlines()
n0 = int(sys.argv[4])
seen = set()
for l in lines[:n0]:
    for a in json.loads(l).get("alerts", []):
        seen.add((json.dumps(a["labels"], sort_keys=True), a["startsAt"]))
for l in lines[n0:]:
    for a in json.loads(l).get("alerts", []):
        if a["status"] == "firing" and (json.dumps(a["labels"], sort_keys=True), a["startsAt"]) not in seen:
            bad.append("fired again after the restart: %s" % a["labels"])
print("restart: %d active alerts before and after, %d notifications since" % (len(after), len(lines) - n0),
      file=sys.stderr)
for b in bad[:10]:
    print("FAIL: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
gw_stop gw2 30 || gw_fail "gpuwatch serve did not stop cleanly after the restart"
gw_log "PASS"
