#!/usr/bin/env bash
# it_exemplars.sh - exemplars from a real Prometheus 2.42 into gpuwatch.
#
#   An OpenMetrics target (python, below) exposes a counter and a histogram
#   whose samples carry exemplars with a new trace_id at every scrape.
#   Prometheus 2.42 (--enable-feature=exemplar-storage, scrape every 1 s)
#   remote-writes to gpuwatch with send_exemplars: true. Then:
#   1. Prometheus' queue reports exemplars sent and none failed (no 400):
#      prometheus_remote_storage_exemplars_total > 0,
#      prometheus_remote_storage_{exemplars,samples}_failed_total == 0;
#   2. gpuwatch's /api/v1/query_exemplars for both metrics answers exactly
#      what Prometheus' own answers for the same query and time range (a
#      range that ended before the last remote-write batch was sent);
#   3. gpuwatch /metrics counts the stored exemplars.
#
# Usage: bash it_exemplars.sh <build_dir>
# Needs prometheus (2.42; GW_ALLOW_SKIP=1 to skip without it).
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build
gw_require_bin prometheus

port=$(gw_free_port)
gw="http://127.0.0.1:$port"
gw_start_gpuwatch gw "$port" "$GW_TMP/data"

om_port=$(gw_free_port)
cat >"$GW_TMP/target.py" <<'EOF'
import http.server, sys, time
n = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global n
        n += 1
        t = time.time()
        body = (
            "# TYPE it_requests counter\n"
            f'it_requests_total{{path="/a"}} {n} # {{trace_id="c{n}"}} 1 {t:.3f}\n'
            "# TYPE it_latency histogram\n"
            f'it_latency_bucket{{le="0.1"}} {n} # {{trace_id="h{n}",span_id="s{n}"}} 0.05 {t:.3f}\n'
            f'it_latency_bucket{{le="+Inf"}} {n}\n'
            f"it_latency_sum {n * 0.05}\n"
            f"it_latency_count {n}\n"
            "# EOF\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
gw_start target "$GW_TMP/target.log" python3 "$GW_TMP/target.py" "$om_port"

prom_port=$(gw_free_port)
prom="http://127.0.0.1:$prom_port"
cat >"$GW_TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: om
    static_configs: [{targets: ["127.0.0.1:$om_port"]}]
remote_write:
  - url: $gw/api/v1/write
    send_exemplars: true
    queue_config: {batch_send_deadline: 1s, min_backoff: 100ms, max_backoff: 1s}
    metadata_config: {send: false}
EOF
gw_start prom "$GW_TMP/prom.log" prometheus --config.file="$GW_TMP/prometheus.yml" \
    --storage.tsdb.path="$GW_TMP/prom" --web.listen-address="127.0.0.1:$prom_port" \
    --enable-feature=exemplar-storage
gw_wait_http prom "$prom/-/ready" 30

metric() { # URL NAME: sum of a metric's values in a /metrics page
    curl -s --max-time 5 "$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 {s += $NF} END {print s + 0}'
}

# Wait for exemplars of at least 4 scrapes (2 exemplars each) to have been sent.
deadline=$((SECONDS + 30))
while ((SECONDS < deadline)); do
    sent=$(metric "$prom" prometheus_remote_storage_exemplars_total)
    ((${sent%.*} >= 8)) && break
    sleep 0.5
done
((${sent%.*} >= 8)) || gw_fail "Prometheus sent only $sent exemplars"
for m in prometheus_remote_storage_exemplars_failed_total prometheus_remote_storage_samples_failed_total; do
    v=$(metric "$prom" "$m")
    [[ "$v" == 0 ]] || gw_fail "$m = $v (gpuwatch refused remote-write batches)"
done
gw_log "Prometheus sent $sent exemplars, none failed"

# 2. The same answer from both, over a range both hold completely: from the
# start until 3 s ago, read once the queue has had time to send it.
# On a busy machine scrapes lag: wait until gpuwatch holds at least 3 of the
# counter's exemplars before that end, so the comparison is not trivial.
deadline=$((SECONDS + 40))
while :; do
    end=$(python3 -c 'import time; print(f"{time.time() - 3:.3f}")')
    n=$(curl -s --max-time 5 -G "$gw/api/v1/query_exemplars" --data-urlencode query=it_requests_total \
        --data-urlencode start=0 --data-urlencode "end=$end" |
        python3 -c 'import json,sys; print(sum(len(s["exemplars"]) for s in json.load(sys.stdin)["data"]))' || echo 0)
    ((n >= 3 || SECONDS >= deadline)) && break
    sleep 1
done
sleep 3
for q in it_requests_total 'it_latency_bucket{le="0.1"}' 'rate(it_latency_bucket[1m])'; do
    a=$(curl -s --max-time 5 -G "$gw/api/v1/query_exemplars" --data-urlencode "query=$q" --data-urlencode start=0 \
        --data-urlencode "end=$end")
    b=$(curl -s --max-time 5 -G "$prom/api/v1/query_exemplars" --data-urlencode "query=$q" --data-urlencode start=0 \
        --data-urlencode "end=$end")
    python3 - "$q" "$a" "$b" <<'EOF' || gw_fail "query_exemplars $q differs: gpuwatch $a, Prometheus $b"
import json, sys
q, a, b = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
assert a["status"] == b["status"] == "success"
norm = lambda d: sorted((json.dumps(s["seriesLabels"], sort_keys=True),
                         [(json.dumps(e["labels"], sort_keys=True), e["value"], e["timestamp"]) for e in s["exemplars"]])
                        for s in d["data"])
assert norm(a) == norm(b), (norm(a), norm(b))
n = sum(len(s["exemplars"]) for s in a["data"])
assert n >= 3, n
print(f"{q}: {n} exemplars, the same as Prometheus'", file=sys.stderr)
EOF
done

stored=$(curl -s --max-time 5 "$gw/metrics" | awk '/^gpuwatch_remote_write_exemplars_total\{outcome="stored"\}/ {print $2}')
((stored >= 8)) || gw_fail "gpuwatch counts $stored stored exemplars"
gw_log "ok: gpuwatch stored $stored exemplars and answers query_exemplars like Prometheus 2.42"
