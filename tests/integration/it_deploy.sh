#!/usr/bin/env bash
# it_deploy.sh - every file in deploy/ is used the way an operator would:
#   1. gpuwatch.service passes `systemd-analyze verify` (ExecStart pointed at
#      the built binary) and `systemd-analyze security` scores it at most
#      2.5 (the hardening is there);
#   2. `cmake --install` puts the binary, the unit (ExecStart naming the
#      installed binary), the sysusers file, the detector config example and
#      the share/gpuwatch configuration and Grafana files where they belong;
#   3. prometheus.yml passes `promtool check config` (with the rule file),
#      gpuwatch-rules.yml `promtool check rules` and its unit tests
#      (tests/data/deploy/gpuwatch-rules.test.yml);
#   4. alertmanager.yml passes `amtool check-config` and routes by severity
#      and action as its header says (`amtool config routes test`);
#   5. dcgm-exporter-counters.csv parses as dcgm-exporter's format, names
#      only documented fields (tests/data/deploy/dcgm-fields.txt) and
#      enables every failure-relevant one;
#   6. node_exporter starts with node-exporter.args and runs the
#      mountstats, nfs and infiniband collectors;
#   7. the Grafana provisioning files are valid YAML with the data source
#      uid the dashboards use, and EVERY query of both dashboards (panel
#      targets, template variables, annotations) answers status success from
#      a gpuwatch fed by a simulation (fleet data) and by a Prometheus run
#      with deploy/prometheus.yml scraping gpuwatch (its own metrics); each
#      fleet query returns data, and each self query whose metric families
#      gpuwatch's /metrics has today returns data (the others, e.g.
#      process_* and the latency histograms, must only succeed, as must the
#      two panels that list only problems: non-zero remapped rows, 5xx).
#
# Usage: bash it_deploy.sh <build_dir>
# Needs promtool, prometheus, amtool, prometheus-node-exporter,
# systemd-analyze (GW_ALLOW_SKIP=1 skips when one is missing).
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"
for b in promtool prometheus amtool prometheus-node-exporter systemd-analyze python3; do gw_require_bin "$b"; done
src=$(cd "$GW_IT_DIR/../.." && pwd)
deploy="$src/deploy"
data="$src/tests/data/deploy"

# 1. the systemd unit
sed "s|^ExecStart=/usr/local/bin/gpuwatch |ExecStart=$GW_BIN |" "$deploy/gpuwatch.service" >"$GW_TMP/gpuwatch.service"
grep -q "^ExecStart=$GW_BIN serve" "$GW_TMP/gpuwatch.service" || gw_fail "gpuwatch.service: no ExecStart=/usr/local/bin/gpuwatch serve"
systemd-analyze verify "$GW_TMP/gpuwatch.service" >"$GW_TMP/verify.out" 2>&1 ||
    { cat "$GW_TMP/verify.out" >&2; gw_fail "systemd-analyze verify gpuwatch.service"; }
for key in User=gpuwatch ProtectSystem=strict ReadWritePaths=/var/lib/gpuwatch NoNewPrivileges=true PrivateTmp=true \
    LimitNOFILE= Restart=on-failure; do
    grep -q "^$key" "$deploy/gpuwatch.service" || gw_fail "gpuwatch.service lacks $key"
done
exposure=$(systemd-analyze security --offline=true "$GW_TMP/gpuwatch.service" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
[[ -n "$exposure" ]] || gw_fail "systemd-analyze security printed no exposure level"
python3 -c "import sys; sys.exit(0 if float('$exposure') <= 2.5 else 1)" ||
    gw_fail "gpuwatch.service exposure $exposure > 2.5 (systemd-analyze security)"
gw_log "unit: verify ok, exposure $exposure"

# 2. cmake --install
prefix="$GW_TMP/prefix"
cmake --install "$GW_BUILD" --prefix "$prefix" >"$GW_TMP/install.out" 2>&1 ||
    { cat "$GW_TMP/install.out" >&2; gw_fail "cmake --install"; }
bindir=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$GW_BUILD/CMakeCache.txt")/bin
for f in bin/gpuwatch lib/systemd/system/gpuwatch.service lib/sysusers.d/gpuwatch.conf etc/gpuwatch/detectors.conf.example \
    share/gpuwatch/prometheus.yml share/gpuwatch/gpuwatch-rules.yml share/gpuwatch/alertmanager.yml \
    share/gpuwatch/dcgm-exporter-counters.csv share/gpuwatch/node-exporter.args \
    share/gpuwatch/grafana/provisioning/datasources/gpuwatch.yml share/gpuwatch/grafana/provisioning/dashboards/gpuwatch.yml \
    share/gpuwatch/grafana/dashboards/gpuwatch-fleet.json share/gpuwatch/grafana/dashboards/gpuwatch-self.json; do
    [[ -s "$prefix/$f" ]] || gw_fail "cmake --install did not install $f"
done
[[ -x "$prefix/bin/gpuwatch" ]] || gw_fail "installed gpuwatch is not executable"
"$prefix/bin/gpuwatch" serve --help >/dev/null 2>&1 || gw_fail "the installed gpuwatch does not run"
grep -q "^ExecStart=$bindir/gpuwatch serve" "$prefix/lib/systemd/system/gpuwatch.service" ||
    gw_fail "the installed unit does not start $bindir/gpuwatch: $(grep ExecStart "$prefix/lib/systemd/system/gpuwatch.service")"
grep -q '^d1 = on' "$prefix/etc/gpuwatch/detectors.conf.example" || gw_fail "detectors.conf.example is not the detector configuration"
"$GW_BIN" serve --print-detector-config --detector-config "$prefix/etc/gpuwatch/detectors.conf.example" >/dev/null ||
    gw_fail "serve does not accept the installed detectors.conf.example"
gw_log "install: ok ($(cd "$prefix" && find . -type f | wc -l) files under $prefix)"

# 3. Prometheus configuration and rules
mkdir -p "$GW_TMP/prom"
cp "$deploy/prometheus.yml" "$deploy/gpuwatch-rules.yml" "$data/gpuwatch-rules.test.yml" "$GW_TMP/prom/"
promtool check config "$GW_TMP/prom/prometheus.yml" >"$GW_TMP/pc.out" 2>&1 || { cat "$GW_TMP/pc.out" >&2; gw_fail "promtool check config prometheus.yml"; }
promtool check rules "$deploy/gpuwatch-rules.yml" >"$GW_TMP/pr.out" 2>&1 || { cat "$GW_TMP/pr.out" >&2; gw_fail "promtool check rules"; }
(cd "$GW_TMP/prom" && promtool test rules gpuwatch-rules.test.yml) >"$GW_TMP/pt.out" 2>&1 ||
    { cat "$GW_TMP/pt.out" >&2; gw_fail "promtool test rules"; }
for a in GpuwatchDown GpuwatchRefusingSamples GpuwatchWalFsyncSlow GpuwatchDiskNearFull GpuwatchNotifierFailing; do
    grep -q "alert: $a\$" "$deploy/gpuwatch-rules.yml" || gw_fail "gpuwatch-rules.yml has no $a"
done
python3 - "$deploy/prometheus.yml" <<'PY' || gw_fail "prometheus.yml remote_write settings"
import re, sys
t = open(sys.argv[1]).read()
def num(k):
    m = re.search(r"^\s+%s:\s*(\d+)" % k, t, re.M)
    return int(m.group(1)) if m else None
bad = []
if not 5000 <= (num("max_samples_per_send") or 0) <= 10000: bad.append("max_samples_per_send not in 5000..10000")
if not num("capacity") or num("capacity") < num("max_samples_per_send"): bad.append("capacity below max_samples_per_send")
if not num("max_shards"): bad.append("no max_shards")
if not re.search(r"^\s+send_exemplars:\s*false", t, re.M): bad.append("send_exemplars not false")
if not re.search(r"metadata_config:\s*\n\s+send:\s*true", t): bad.append("metadata sending not on")
if "remote_read:" not in t or "/api/v1/read" not in t: bad.append("no remote_read")
for b in bad: print("FAIL prometheus.yml: " + b)
sys.exit(1 if bad else 0)
PY
gw_log "prometheus: check config, check rules, test rules: ok"

# 4. Alertmanager
amtool check-config "$deploy/alertmanager.yml" >"$GW_TMP/am.out" 2>&1 || { cat "$GW_TMP/am.out" >&2; gw_fail "amtool check-config"; }
while read -r want labels; do
    # shellcheck disable=SC2086
    got=$(amtool config routes test --config.file="$deploy/alertmanager.yml" $labels 2>/dev/null)
    [[ "$got" == "$want" ]] || gw_fail "alertmanager.yml routes {$labels} to '$got', want '$want'"
done <<'EOF'
node-ops-page alertname=GpuXidError severity=critical action=reset_gpu hostname=gpu001 gpu=3
node-ops-page alertname=NodeSilent severity=critical action=reboot_node hostname=gpu001
node-ops alertname=GpuMemoryDegrading severity=warning action=drain_node hostname=gpu001 gpu=1
ml-jobs alertname=GpuXidError severity=info action=restart_app hostname=gpu001 gpu=2
ml-jobs alertname=GpuCollectiveXidBurst severity=info action=restart_app
blackhole alertname=CheckpointIoBottleneck severity=info action=none
oncall-ticket alertname=CheckpointIoBottleneck severity=warning action=none cause=slot_limited
oncall-page alertname=GpuVanished severity=critical action=none hostname=gpu001
gpuwatch-admins alertname=GpuwatchDown severity=critical action=none component=gpuwatch
EOF
gw_log "alertmanager: check-config and 9 routes: ok"

# 5. dcgm-exporter counters
python3 - "$deploy/dcgm-exporter-counters.csv" "$data/dcgm-fields.txt" <<'PY' || gw_fail "dcgm-exporter-counters.csv"
import sys
known = {l.strip() for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")}
rows, bad = {}, []
for n, line in enumerate(open(sys.argv[1]), 1):
    s = line.strip()
    if not s or s.startswith("#"):
        continue
    parts = [p.strip() for p in s.split(",", 2)]
    if len(parts) != 3 or not all(parts):
        bad.append("line %d: not 'FIELD, type, help': %s" % (n, s)); continue
    field, kind, _ = parts
    if kind not in ("gauge", "counter", "label"):
        bad.append("line %d: type %r" % (n, kind))
    if field not in known:
        bad.append("line %d: %s is not a documented field" % (n, field))
    if field in rows:
        bad.append("line %d: %s twice" % (n, field))
    rows[field] = kind
need = ["DCGM_FI_DEV_XID_ERRORS", "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_RETIRED_PENDING",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION",
        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"]
for f in need:
    if f not in rows:
        bad.append("%s is not enabled" % f)
for b in bad: print("FAIL dcgm-exporter-counters.csv: " + b)
print("dcgm-exporter-counters.csv: %d fields (%d counters, %d gauges, %d labels)" % (len(rows),
      sum(k == "counter" for k in rows.values()), sum(k == "gauge" for k in rows.values()), sum(k == "label" for k in rows.values())))
sys.exit(1 if bad else 0)
PY

# 6. node_exporter with the deploy flags (the listen address replaced)
ne_port=$(gw_free_port)
mapfile -t ne_args < <(grep -v '^#' "$deploy/node-exporter.args" | grep -v '^[[:space:]]*$' | grep -v '^--web.listen-address')
for c in mountstats nfs infiniband; do
    printf '%s\n' "${ne_args[@]}" | grep -qx -- "--collector.$c" || gw_fail "node-exporter.args does not enable $c"
done
gw_start ne "$GW_TMP/ne.log" prometheus-node-exporter "${ne_args[@]}" --web.listen-address="127.0.0.1:$ne_port"
gw_wait_http ne "http://127.0.0.1:$ne_port/metrics" 30
curl -s "http://127.0.0.1:$ne_port/metrics" >"$GW_TMP/ne.metrics"
for c in mountstats nfs infiniband netdev interrupts processes; do
    grep -q "^node_scrape_collector_success{collector=\"$c\"}" "$GW_TMP/ne.metrics" ||
        gw_fail "node_exporter with node-exporter.args does not run the $c collector"
done
gw_stop ne 10 || true
gw_log "node_exporter: starts with node-exporter.args; mountstats, nfs, infiniband collectors run"

# 7. Grafana: provisioning files and every dashboard query against a live gpuwatch
python3 - "$deploy/grafana" <<'PY' || gw_fail "Grafana provisioning"
import json, re, sys
g = sys.argv[1]
ds = open(g + "/provisioning/datasources/gpuwatch.yml").read()
pv = open(g + "/provisioning/dashboards/gpuwatch.yml").read()
bad = []
for k in ("apiVersion: 1", "type: prometheus", "uid: gpuwatch", "url: http://127.0.0.1:9201"):
    if k not in ds: bad.append("datasource lacks %r" % k)
for k in ("apiVersion: 1", "type: file", "path: /usr/local/share/gpuwatch/grafana/dashboards"):
    if k not in pv: bad.append("dashboards provider lacks %r" % k)
for name in ("gpuwatch-fleet", "gpuwatch-self"):
    d = json.load(open("%s/dashboards/%s.json" % (g, name)))
    if d.get("uid") != name: bad.append("%s: uid %r" % (name, d.get("uid")))
    ids = set()
    for p in d["panels"]:
        if p["id"] in ids: bad.append("%s: panel id %d twice" % (name, p["id"]))
        ids.add(p["id"])
        if p["type"] != "row" and p.get("datasource", {}).get("uid") != "gpuwatch":
            bad.append("%s: panel %r not on data source gpuwatch" % (name, p["title"]))
for b in bad: print("FAIL grafana: " + b)
sys.exit(1 if bad else 0)
PY

gw_port=$(gw_free_port)
pr_port=$(gw_free_port)
gw="http://127.0.0.1:$gw_port"
gw_start_gpuwatch gw "$gw_port" "$GW_TMP/gwdata"
interval_ms=30000
end_ms=$(( ($(date +%s) - 90) * 1000 ))
end_ms=$(( end_ms - end_ms % interval_ms ))
"$GW_BIN" simulate --profile smoke --seed 4 --nodes 8 --duration 4h --start "$((end_ms - 4 * 3600000))" --failure-scale 100 \
    --url "$gw/api/v1/write" >"$GW_TMP/sim.out" 2>&1 || { cat "$GW_TMP/sim.out" >&2; gw_fail "simulate failed"; }
# deploy/prometheus.yml with the addresses of this test and a 2 s scrape interval
sed -e "s|127.0.0.1:9201|127.0.0.1:$gw_port|g" -e "s|scrape_interval: 30s|scrape_interval: 2s|" \
    -e "s|evaluation_interval: 30s|evaluation_interval: 2s|" -e "s|scrape_timeout: 10s|scrape_timeout: 2s|" \
    -e "s|batch_send_deadline: 5s|batch_send_deadline: 1s|" "$deploy/prometheus.yml" >"$GW_TMP/prom/prometheus.yml"
gw_start prom "$GW_TMP/prom.log" prometheus --config.file="$GW_TMP/prom/prometheus.yml" \
    --storage.tsdb.path="$GW_TMP/promdata" --web.listen-address="127.0.0.1:$pr_port"
gw_wait_http prom "http://127.0.0.1:$pr_port/-/ready" 60
# gpuwatch's own series arrive through Prometheus: wait for 8 scrapes of them
deadline=$((SECONDS + 90))
while :; do
    n=$(curl -s "$gw/api/v1/query" --data-urlencode 'query=count_over_time(gpuwatch_ready{job="gpuwatch"}[2m])' |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)')
    ((n >= 8)) && break
    ((SECONDS < deadline)) || gw_fail "Prometheus did not send gpuwatch's own metrics to it within 90 s ($n samples)"
    sleep 2
done
curl -s "$gw/metrics" >"$GW_TMP/self.metrics"
gw_log "Prometheus (deploy/prometheus.yml) scrapes gpuwatch and remote-writes to it; running every dashboard query"

python3 - "$gw" "$deploy/grafana/dashboards" "$GW_TMP/self.metrics" "$end_ms" <<'PY' || gw_fail "dashboard queries"
import json, re, sys, time, urllib.parse, urllib.request
gw, ddir, metrics_file, end_ms = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
families = set()
for line in open(metrics_file):
    m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", line)
    if m and not line.startswith("#"):
        families.add(m.group(1))
families.add("up")

def get(path, params):
    u = gw + path + "?" + urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(u, timeout=60) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)

def subst(expr):
    for v, val in (("$__rate_interval", "2m"), ("$__interval", "1m"), ("$__range", "1h"), ("${node}", ".*"),
                   ("$node", ".*"), ("${instance}", ".*"), ("$instance", ".*")):
        expr = expr.replace(v, val)
    if "$" in re.sub(r"\{\{[^}]*\}\}", "", expr):
        raise ValueError("unknown variable in %r" % expr)
    return expr

def names(expr):
    expr = re.sub(r'"[^"]*"', '""', expr)
    ids = set(re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", expr))
    return {i for i in ids if i.startswith(("gpuwatch_", "process_")) or i in ("up",)}

def family_exists(n):
    return n in families or re.sub(r"_(bucket|sum|count)$", "", n) in families and n.endswith(("_bucket", "_sum", "_count"))

# Panels that list only problems: empty while the simulated fleet (seed 4 has
# no memory failure) and gpuwatch are healthy, so they must only succeed.
PROBLEM_ONLY = {"Remapped rows and remap state (non-zero)", "Errors (5xx) /s by route"}
now = time.time()
bad, report = 0, []
for name, fleet in (("gpuwatch-fleet", True), ("gpuwatch-self", False)):
    d = json.load(open("%s/%s.json" % (ddir, name)))
    queries = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            queries.append((p["title"], t["expr"]))
    for a in d.get("annotations", {}).get("list", []):
        if a.get("expr"):
            queries.append(("annotation " + a["name"], a["expr"]))
    for v in d.get("templating", {}).get("list", []):
        q = v["query"]["query"] if isinstance(v.get("query"), dict) else v.get("query", "")
        m = re.match(r"^label_values\((.*),\s*([a-zA-Z_]+)\)$", q)
        if not m:
            print("FAIL %s: variable %s: not label_values(selector, label): %r" % (name, v["name"], q)); bad += 1; continue
        r = get("/api/v1/label/%s/values" % m.group(2), {"match[]": m.group(1)})
        ok = r.get("status") == "success" and r.get("data")
        print("%s %s: variable %s: %s -> %d values" % ("OK" if ok else "FAIL", name, v["name"], q, len(r.get("data") or [])))
        bad += not ok
    if fleet:
        start, end, step = end_ms / 1000 - 4 * 3600, end_ms / 1000, 120
    else:
        start, end, step = now - 120, now, 4
    n_data = n_nodata_ok = 0
    for title, expr in queries:
        try:
            q = subst(expr)
        except ValueError as e:
            print("FAIL %s: %s: %s" % (name, title, e)); bad += 1; continue
        r = get("/api/v1/query_range", {"query": q, "start": "%.3f" % start, "end": "%.3f" % end, "step": step})
        if r.get("status") != "success":
            print("FAIL %s: %s: %s -> %s: %s" % (name, title, q, r.get("errorType"), r.get("error"))); bad += 1; continue
        series = len(r["data"]["result"])
        missing = [] if fleet else sorted(n for n in names(expr) if not family_exists(n))
        need = not missing and title not in PROBLEM_ONLY
        if series:
            n_data += 1
        elif need:
            print("FAIL %s: %s: %s returned no data" % (name, title, q)); bad += 1; continue
        else:
            n_nodata_ok += 1
            print("NOTE %s: %s: success, no data (%s)" % (name, title, "not in /metrics today: " + ", ".join(missing)
                  if missing else "lists only problems; none now"))
    print("%s: %d queries, %d with data, %d success without data (see NOTE)" %
          (name, len(queries), n_data, n_nodata_ok))
sys.exit(1 if bad else 0)
PY

gw_stop prom 30 || true
gw_stop gw 60 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS"
