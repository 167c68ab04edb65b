#!/usr/bin/env python3
"""soak_queries.py - a dashboard that keeps refreshing during the soak.

Every --every seconds it sends each panel query of bench/dashboard_queries.txt
as Grafana does (POST /api/v1/query_range, keep-alive) over the last hour of
data that has been acknowledged so far (the newest scrape in the sender's ack
log). A query answered by a connection error or a 503 (the server restarting)
is retried for up to --retry-s seconds; anything else than a 200 in the end is
an error. Runs until the file --stop exists, then prints one line:
  queries=N ok=N errors=N retried=N p50_ms=X p99_ms=X max_ms=X
and writes every latency (ms) to --lat-out. Standard library only.
"""
import argparse
import http.client
import os
import sys
import time
import urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--queries", required=True)
ap.add_argument("--ack-log", required=True)
ap.add_argument("--nodes", type=int, default=63)
ap.add_argument("--every", type=float, default=10.0)
ap.add_argument("--retry-s", type=float, default=120.0)
ap.add_argument("--stop", required=True)
ap.add_argument("--lat-out", required=True)
a = ap.parse_args()

hosts = "|".join("gpu%03d:9400" % (i + 1) for i in range(a.nodes))
subst = {"$instance": "(%s)" % hosts, "$gpu": "(0|1|2|3|4|5|6|7)", "$node": "gpu001:9100", "$job": "node"}
STEP = 15          # 1 h / 240 points: Grafana's interval for a 1 h panel at this width
RATE_IV = "60s"    # max(step + 15 s, 4 * 15 s)
queries = []
for line in open(a.queries):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    qid, _panel, expr = [x.strip() for x in line.split("|", 2)]
    expr = expr.replace("$__rate_interval", RATE_IV)
    for k, v in subst.items():
        expr = expr.replace(k, v)
    queries.append((qid, expr))

u = urllib.parse.urlparse(a.url)
conn = None


def newest_ms():
    """The newest acknowledged scrape's time, from the ack log header and lines."""
    try:
        with open(a.ack_log, "rb") as f:
            head = f.readline().decode()
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4096))
            tail = f.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    kv = dict(p.split("=", 1) for p in head.split() if "=" in p)
    js = [int(x.split()[0]) for x in tail[1:] if x and not x.startswith("#") and len(x.split()) == 3]
    if not js or "start" not in kv:
        return None
    return int(kv["start"]) + max(js) * int(kv["interval"])


def post(form):
    global conn
    body = urllib.parse.urlencode(form)
    if conn is None:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request("POST", "/api/v1/query_range", body, {"Content-Type": "application/x-www-form-urlencoded"})
    r = conn.getresponse()
    data = r.read()
    return r.status, data


lat, errors, retried, total = [], 0, 0, 0
while not os.path.exists(a.stop):
    t_round = time.time()
    end_ms = newest_ms()
    if end_ms is None:
        time.sleep(1)
        continue
    end = (end_ms // 1000 // STEP) * STEP
    for qid, expr in queries:
        form = {"query": expr, "start": str(end - 3600), "end": str(end), "step": str(STEP)}
        total += 1
        deadline = time.time() + a.retry_s
        tries = 0
        while True:
            t0 = time.time()
            try:
                status, data = post(form)
            except (OSError, http.client.HTTPException) as e:
                status, data = 0, str(e).encode()
                conn = None
            if status == 200:
                lat.append((time.time() - t0) * 1000.0)
                break
            if status in (0, 503) and time.time() < deadline:
                tries += 1
                time.sleep(0.5)
                continue
            errors += 1
            sys.stderr.write("soak_queries: %s -> HTTP %d: %s\n" % (qid, status, data[:300].decode(errors="replace")))
            break
        if tries:
            retried += 1
    time.sleep(max(0.0, a.every - (time.time() - t_round)))

with open(a.lat_out, "w") as f:
    f.write("\n".join("%.2f" % x for x in lat) + "\n")
s = sorted(lat) or [0.0]


def pct(p):
    return s[min(len(s) - 1, int(p / 100.0 * len(s)))]


print("queries=%d ok=%d errors=%d retried=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f"
      % (total, len(lat), errors, retried, pct(50), pct(99), s[-1]))
