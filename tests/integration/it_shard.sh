#!/usr/bin/env bash
# it_shard.sh - sharding gpuwatch by node behind Prometheus' hashmod
# (docs/sharding.md, "Series-level sharding"): each node's series reach
# exactly one gpuwatch, and each failing node is alerted exactly once, by
# the shard that owns it.
#
#   dcgm_textfile.py (N nodes x 8 GPUs, rewritten every second; XID 79 on
#   GPU 3 of some nodes after a while) served over HTTP
#     <- Prometheus 0 and Prometheus 1 (2.42), the same scrape target,
#        metric_relabel_configs hashmod on the node label (hostname or
#        Hostname), modulus 2, each keeping its own share
#     -> remote write to gpuwatch shard 0 / shard 1
#
# Checks: the nodes each shard stores are disjoint and together all N
# nodes, each shard owns at least one, and the owner is the one the md5
# rule of docs/sharding.md predicts; every failing node has exactly one
# GpuXidError alert, on its owner, none on the other shard; no other node
# is alerted.
#
# Usage: bash it_shard.sh <build_dir>
# Env: GW_SHARD_NODES (default 6), GW_SHARD_XID_NODES (0-based, default
#      "1,2,4"), GW_SHARD_WAIT_SECS (default 45: longest wait for the alerts).
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build
gw_require_bin prometheus

nodes=${GW_SHARD_NODES:-6}
xid_nodes=${GW_SHARD_XID_NODES:-1,2,4}
wait_secs=${GW_SHARD_WAIT_SECS:-45}
tgt_port=$(gw_free_port)
mkdir -p "$GW_TMP/target"
gw_start target "$GW_TMP/target.log" python3 -m http.server "$tgt_port" --bind 127.0.0.1 --directory "$GW_TMP/target"

declare -a gw_ports p_ports
for i in 0 1; do
    gw_ports[$i]=$(gw_free_port)
    gw_start "gw$i" "$GW_TMP/gw$i.log" "$GW_BIN" serve --listen "127.0.0.1:${gw_ports[$i]}" --data-dir "$GW_TMP/gw$i"
    p_ports[$i]=$(gw_free_port)
    # The scrape job of docs/sharding.md ("Series-level sharding"), shard $i of 2.
    cat >"$GW_TMP/prom$i.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: dcgm
    metrics_path: /dcgm.prom
    static_configs:
      - targets: ['127.0.0.1:$tgt_port']
    metric_relabel_configs:
      - source_labels: [hostname, Hostname]
        separator: ''
        target_label: __tmp_node
      - source_labels: [__tmp_node]
        modulus: 2
        target_label: __tmp_shard
        action: hashmod
      - source_labels: [__tmp_shard]
        regex: '$i'
        action: keep
      - regex: '__tmp_node|__tmp_shard'
        action: labeldrop
remote_write:
  - url: http://127.0.0.1:${gw_ports[$i]}/api/v1/write
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 30ms
      max_backoff: 1s
EOF
    gw_start "prom$i" "$GW_TMP/prom$i.log" prometheus --config.file="$GW_TMP/prom$i.yml" \
        --storage.tsdb.path="$GW_TMP/p$i" --web.listen-address="127.0.0.1:${p_ports[$i]}"
done
for i in 0 1; do
    gw_wait_http "gw$i" "http://127.0.0.1:${gw_ports[$i]}/-/ready" 60
    gw_wait_http "prom$i" "http://127.0.0.1:${p_ports[$i]}/-/ready" 60
done
# The series start once both shards scrape, so the XIDs come after
# gpuwatch has seen every GPU healthy (an XID already latched at the first
# sight of a GPU is a level, not an onset).
gw_start textfile "$GW_TMP/textfile.log" python3 "$GW_IT_DIR/dcgm_textfile.py" --dir "$GW_TMP/target" \
    --nodes "$nodes" --period 1 --xid-nodes "$xid_nodes" --xid-from 6
gw_wait_http target "http://127.0.0.1:$tgt_port/dcgm.prom" 30
gw_log "2 shards (gpuwatch :${gw_ports[0]} :${gw_ports[1]}) scraping $nodes nodes; XID on nodes $xid_nodes"

# Waits until every failing node is alerted somewhere, then 3 s more (a
# second alert on the wrong shard would show by then), and checks.
python3 - "${gw_ports[0]}" "${gw_ports[1]}" "$nodes" "$xid_nodes" "$wait_secs" <<'EOF'
import hashlib, json, sys, time, urllib.request

ports, nodes, wait = sys.argv[1:3], int(sys.argv[3]), float(sys.argv[5])
failing = {"gpu%03d" % (int(x) + 1) for x in sys.argv[4].split(",") if x.strip()}
allnodes = {"gpu%03d" % (n + 1) for n in range(nodes)}

def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=10) as r:
        return json.load(r)["data"]

def xid_alerts(port):
    out = []
    for a in get(port, "/api/v1/alerts")["alerts"]:
        if a["labels"].get("alertname") == "GpuXidError":
            out.append(a["labels"].get("hostname", ""))
    return out

def shard_of(node):   # Prometheus hashmod: md5, low 8 bytes big-endian, mod 2
    return int.from_bytes(hashlib.md5(node.encode()).digest()[8:], "big") % 2

t0 = time.time()
deadline = t0 + wait
while time.time() < deadline:
    alerted = set(xid_alerts(ports[0])) | set(xid_alerts(ports[1]))
    if failing <= alerted:
        break
    time.sleep(0.5)
print("alerts after %.1fs" % (time.time() - t0))
time.sleep(3)
owned = []
for p in ports:
    names = set(get(p, "/api/v1/label/hostname/values")) | set(get(p, "/api/v1/label/Hostname/values"))
    owned.append(names)
print("owned: shard0=%s shard1=%s" % (sorted(owned[0]), sorted(owned[1])))
problems = []
if owned[0] & owned[1]:
    problems.append("nodes on both shards: %s" % sorted(owned[0] & owned[1]))
if owned[0] | owned[1] != allnodes:
    problems.append("nodes on no shard: %s" % sorted(allnodes - (owned[0] | owned[1])))
if not owned[0] or not owned[1]:
    problems.append("one shard owns no node: the split is not exercised")
for i in (0, 1):
    wrong = [n for n in owned[i] if shard_of(n) != i]
    if wrong:
        problems.append("shard %d holds %s, which md5 hashmod puts on the other shard" % (i, wrong))
alerts = [xid_alerts(ports[0]), xid_alerts(ports[1])]
print("GpuXidError alerts: shard0=%s shard1=%s" % (sorted(alerts[0]), sorted(alerts[1])))
for n in sorted(allnodes):
    on = [alerts[0].count(n), alerts[1].count(n)]
    owner = 0 if n in owned[0] else 1
    want = [0, 0]
    if n in failing:
        want[owner] = 1
    if on != want:
        problems.append("node %s (shard %d, %s): alerts per shard %s, want %s"
                        % (n, owner, "failing" if n in failing else "healthy", on, want))
if problems:
    print("\n".join(problems))
    sys.exit(1)
EOF
echo "PASS: $GW_TEST_NAME"
