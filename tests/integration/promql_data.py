#!/usr/bin/env python3
"""promql_data.py - writes the deterministic data set of the differential
PromQL test (it_promql_diff.sh): the same file is sent to a real Prometheus
and to gpuwatch with `gw_rwload send-text`, then promql_diff.py compares
their answers.

Usage: promql_data.py --out data.txt --meta meta.json [--end-ms MS] [--hours 2]

Output format (the input of `gw_rwload send-text`, see tools/gw_rwload/main.c):
one sample per line, `<name>{<label>="<value>",...} <unix ms> <value>`,
value a decimal float, NaN, +Inf, -Inf or `stale` (the stale-marker NaN,
bits 0x7ff0000000000002). The samples of one series are written in time
order, one series after the other. Example:

    node_cpu_seconds_total{cpu="0",instance="h0:9100",job="node",mode="idle"} 1700000003217 12.25
    pq_intermittent{case="stale_stop",instance="b0:9000",job="batch"} 1700003618514 stale

The data (all values are pure functions of the series and the scrape
number, so a given --end-ms gives the same file byte for byte):
  * 2 hours of scrapes every 15 s ending at --end-ms (default: the last
    whole minute, minus 3 minutes, so Prometheus' remote-write receiver
    takes all of it); every target has its own offset in the 15 s interval
    and every scrape +-500 ms of jitter, so no timestamp is on a grid;
  * job="node", 4 instances: node_cpu_seconds_total{cpu,mode} counters
    (h1 restarts at scrape 200: every counter resets; h2 cpu 0 user resets
    twice), node_memory_bytes{type} large integer gauges, node_num_cpus,
    node_info{nodename,version,src} (value 1), node_load1 (2 decimals),
    node_boot_time_seconds;
  * job="dcgm", 2 hosts x 4 GPUs: DCGM_FI_DEV_GPU_TEMP (integers),
    DCGM_FI_DEV_POWER_USAGE (3 decimals), DCGM_FI_DEV_XID_ERRORS (mostly 0,
    sometimes an XID code), DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (counter
    near 1e9), DCGM_FI_DEV_GPU_UTIL (0..100);
  * job="api", 3 instances: http_requests_total{method,code} counters (a1
    restarts at scrape 240, a2 GET/200 resets at 100 and 300), the classic
    histogram http_request_duration_seconds_{bucket,sum,count} (10 buckets
    incl. le="+Inf"; resets with a1), pq_broken_hist_bucket (a0: no +Inf
    bucket; a1: counts not monotonic in le);
  * job="batch": pq_intermittent{case} series that start late, stop early
    with and without a stale marker, have short and long gaps, a single
    stale marker, a stale marker every 10th scrape; pq_last_success_
    timestamp_seconds (a Unix time, updated every 20 scrapes);
  * job="special": pq_special{kind} NaN always, +Inf, -Inf, NaN in the
    middle, Inf in the middle, huge (~1e300), tiny (~1e-300), negative,
    zero, integer; pq_counter_float{kind} fractional counters with a reset
    to a non-zero value and with a NaN sample;
  * job="grid": pq_grid_counter (reset at scrape 250), pq_grid_gauge and
    pq_grid_stop (stops after scrape 300, no stale marker) with timestamps
    exactly on the 15 s grid, so windows of aligned queries start and end
    exactly on samples (Prometheus 2's closed windows include both ends);
  * pq_date{which} constant Unix times (a leap day, year ends, before
    1970, 2100); pq_temperature{zone,rack,sensor} (24 fractional gauges);
  * machine_role{instance,role} for group_left joins, with two series for
    h3:9100 (a deliberately duplicated match); pq_labels{src,dst,path} for
    label_replace/label_join.

The meta file (JSON) gives promql_diff.py the time range: start_ms, end_ms,
interval_ms, scrapes, and a few exact sample timestamps (sample_ts: scrapes
of node/h0:9100; stale_ts: the stale marker of pq_intermittent stale_stop;
gap_mid_ts: inside the 10-minute gap of gap_long; edge_ts: exactly 5 min
after the last sample of pq_intermittent no_stale_stop, the lookback edge;
w4_ms: the distance between scrapes 236 and 240 of node/h0:9100, so a
window of that length ending at sample_ts 240 starts exactly on a sample).
"""
import argparse
import json
import math
import random
import sys
import time
import zlib

INTERVAL_MS = 15000


def fmt_value(v):
    if isinstance(v, str):
        return v
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def fmt_labels(name, labels):
    parts = []
    for k in sorted(labels):
        v = labels[k].replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        parts.append('%s="%s"' % (k, v))
    return "%s{%s}" % (name, ",".join(parts))


class Gen:
    def __init__(self, start_ms, scrapes):
        self.start_ms = start_ms
        self.scrapes = scrapes
        self.series = []          # (name, labels, [(t, value)])

    def ts(self, job, instance, j):
        """Timestamp of scrape j of a target: own offset plus jitter (job
        "grid": exactly on the 15 s grid, to hit window boundaries)."""
        if job == "grid":
            return self.start_ms + j * INTERVAL_MS
        h = zlib.crc32(("%s/%s" % (job, instance)).encode())
        off = 1000 + h % 12000
        jit = zlib.crc32(("%s/%s/%d" % (job, instance, j)).encode()) % 1001 - 500
        return self.start_ms + j * INTERVAL_MS + off + jit

    def add(self, name, labels, fn, js=None):
        """fn(j, rng) -> value, None (no sample) or 'stale'."""
        rng = random.Random(zlib.crc32(fmt_labels(name, labels).encode()))
        pts = []
        for j in (js if js is not None else range(self.scrapes)):
            v = fn(j, rng)
            if v is None:
                continue
            pts.append((self.ts(labels["job"], labels["instance"], j), v))
        self.series.append((name, labels, pts))


def counter(rate, resets=(), reset_to=0.0, decimals=None):
    """Counter growing by ~rate per scrape, dropping to reset_to at the
    scrapes in resets."""
    state = {"v": None}

    def fn(j, rng):
        if state["v"] is None:
            state["v"] = round(rng.uniform(0, 50 * rate), 2 if decimals is None else decimals)
        elif j in resets:
            state["v"] = reset_to
        else:
            inc = rate * rng.uniform(0.5, 1.5)
            state["v"] = state["v"] + (round(inc) if decimals == 0 else round(inc, 2 if decimals is None else decimals))
        return state["v"]
    return fn


def walk(lo, hi, step, decimals):
    state = {"v": None}

    def fn(j, rng):
        if state["v"] is None:
            state["v"] = rng.uniform(lo, hi)
        else:
            state["v"] = min(hi, max(lo, state["v"] + rng.uniform(-step, step)))
        return round(state["v"], decimals) if decimals > 0 else float(round(state["v"]))
    return fn


def const(v):
    return lambda j, rng: v


def build(g):
    n = g.scrapes
    # ---- job="node"
    for i in range(4):
        inst = "h%d:9100" % i
        for cpu in range(4):
            for mode, rate in (("idle", 9.0), ("user", 3.5), ("system", 1.2), ("iowait", 0.05)):
                resets = ()
                if i == 1:
                    resets = (200,)
                elif i == 2 and cpu == 0 and mode == "user":
                    resets = (150, 330)
                g.add("node_cpu_seconds_total",
                      {"job": "node", "instance": inst, "cpu": str(cpu), "mode": mode},
                      counter(rate, resets))
        for typ, base in (("free", 3e10), ("used", 9e10), ("cached", 2e10), ("buffers", 1e9)):
            g.add("node_memory_bytes", {"job": "node", "instance": inst, "type": typ},
                  walk(base * 0.8, base * 1.2, base * 0.01, 0))
        g.add("node_num_cpus", {"job": "node", "instance": inst}, const(8 if i == 3 else 4))
        g.add("node_info", {"job": "node", "instance": inst, "nodename": "node-%d" % i,
                            "version": "1.%d" % (i % 2), "src": "a-b-%d" % i}, const(1))
        g.add("node_load1", {"job": "node", "instance": inst}, walk(0, 4, 0.3, 2))
        g.add("node_boot_time_seconds", {"job": "node", "instance": inst},
              const(float(g.start_ms // 1000 - 86400 * (i + 1) - 1234 * i)))
    # ---- job="dcgm"
    for i in range(2):
        inst = "g%d:9400" % i
        model = "NVIDIA A100-SXM4-80GB" if i == 0 else "NVIDIA H100 80GB HBM3"
        for gpu in range(4):
            lb = {"job": "dcgm", "instance": inst, "gpu": str(gpu), "Hostname": "g%d" % i,
                  "UUID": "GPU-%08x-%d" % (zlib.crc32(inst.encode()), gpu), "modelName": model}
            g.add("DCGM_FI_DEV_GPU_TEMP", dict(lb), walk(30, 90, 2, 0))
            g.add("DCGM_FI_DEV_POWER_USAGE", dict(lb), walk(60, 700, 25, 3))
            g.add("DCGM_FI_DEV_XID_ERRORS", dict(lb),
                  lambda j, rng: float(rng.choice((13, 31, 43, 79))) if rng.random() < 0.03 else 0.0)
            g.add("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", dict(lb), counter(6000.0, decimals=0))
            g.add("DCGM_FI_DEV_GPU_UTIL", dict(lb), walk(0, 100, 15, 0))
    # ---- job="api"
    les = ("0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf")
    for i in range(3):
        inst = "a%d:8080" % i
        for method in ("GET", "POST"):
            for code in ("200", "500"):
                resets = ()
                if i == 1:
                    resets = (240,)
                elif i == 2 and method == "GET" and code == "200":
                    resets = (100, 300)
                rate = (40.0 if method == "GET" else 7.0) * (1.0 if code == "200" else 0.03)
                g.add("http_requests_total",
                      {"job": "api", "instance": inst, "method": method, "code": code},
                      counter(rate, resets, decimals=0))
        # classic histogram: one observation stream per instance
        hrng = random.Random(1000 + i)
        counts = [0] * len(les)
        total = {"sum": 0.0}
        hist = []
        for j in range(n):
            if i == 1 and j == 240:
                counts = [0] * len(les)
                total["sum"] = 0.0
            for _ in range(hrng.randint(5, 40) if j > 0 else 200):
                x = hrng.lognormvariate(math.log(0.08 + 0.05 * i), 1.0)
                total["sum"] += x
                for k, le in enumerate(les):
                    if le == "+Inf" or x <= float(le):
                        counts[k] += 1
            hist.append((list(counts), round(total["sum"], 6)))
        base = {"job": "api", "instance": inst, "method": "GET"}
        for k, le in enumerate(les):
            lb = dict(base)
            lb["le"] = le
            g.add("http_request_duration_seconds_bucket", lb, lambda j, rng, k=k: float(hist[j][0][k]))
        g.add("http_request_duration_seconds_sum", dict(base), lambda j, rng: hist[j][1])
        g.add("http_request_duration_seconds_count", dict(base), lambda j, rng: float(hist[j][0][-1]))
    for le, f in (("0.1", 1.0), ("0.5", 3.0)):
        g.add("pq_broken_hist_bucket", {"job": "api", "instance": "a0:8080", "le": le},
              lambda j, rng, f=f: f * (j + 1))
    for le, f in (("0.1", 2.0), ("0.5", 1.5), ("+Inf", 4.0)):
        g.add("pq_broken_hist_bucket", {"job": "api", "instance": "a1:8080", "le": le},
              lambda j, rng, f=f: f * (j + 1))
    # ---- job="batch"
    b = {"job": "batch", "instance": "b0:9000"}

    def inter(case, fn, js=None):
        lb = dict(b)
        lb["case"] = case
        g.add("pq_intermittent", lb, fn, js)
    inter("stale_stop", lambda j, rng: "stale" if j == 241 else float(j), range(120, 242))
    inter("no_stale_stop", lambda j, rng: float(j) * 0.5, range(120, 241))
    inter("gap_short", lambda j, rng: None if 200 <= j < 210 else float(j % 7))
    inter("gap_long", lambda j, rng: "stale" if j == 200 else (None if 200 < j < 240 else float(j % 11)))
    inter("late_start", lambda j, rng: float(j - 400), range(400, n))
    inter("early_stop", lambda j, rng: "stale" if j == 40 else float(100 - j), range(0, 41))
    inter("stale_single", lambda j, rng: "stale" if j == 300 else float(j % 5))
    inter("stale_every_10", lambda j, rng: "stale" if j % 10 == 9 else float(j))
    g.add("pq_last_success_timestamp_seconds", dict(b),
          lambda j, rng: float((g.start_ms + (j // 20) * 20 * INTERVAL_MS) // 1000))
    # ---- job="special"
    s = {"job": "special", "instance": "s0:9000"}

    def special(name, kind, fn):
        lb = dict(s)
        lb["kind"] = kind
        g.add(name, lb, fn)
    special("pq_special", "nan", const(float("nan")))
    special("pq_special", "pinf", const(float("inf")))
    special("pq_special", "ninf", const(float("-inf")))
    special("pq_special", "nan_middle", lambda j, rng: float("nan") if j == 250 else float(j % 13) + 0.25)
    special("pq_special", "inf_middle", lambda j, rng: float("inf") if 260 <= j < 263 else float(j % 9))
    special("pq_special", "huge", lambda j, rng: rng.uniform(1, 9) * 1e300)
    special("pq_special", "tiny", lambda j, rng: rng.uniform(1, 9) * 1e-300)
    special("pq_special", "negative", walk(-500, -1, 20, 4))
    special("pq_special", "zero", const(0.0))
    special("pq_special", "int", lambda j, rng: float(j // 4))
    special("pq_counter_float", "float_reset", counter(0.37, (180,), reset_to=3.5))
    special("pq_counter_float", "nan_sample",
            lambda j, rng: float("nan") if j == 222 else round(1.5 * j + 0.125, 3))
    # ---- job="grid": timestamps exactly on the grid (closed vs open windows)
    gb = {"job": "grid", "instance": "grid0:9000"}
    g.add("pq_grid_counter", dict(gb), counter(10.0, (250,), decimals=0))
    g.add("pq_grid_gauge", dict(gb), lambda j, rng: float(j % 17))
    g.add("pq_grid_stop", dict(gb), lambda j, rng: float(j), range(0, 301))
    # ---- dates, multi-dimensional gauges, joins, label games
    d = {"job": "dates", "instance": "d0:9000"}
    for which, v in (("leap_day", 951782400.0), ("y2k_eve", 946684799.0), ("before_1970", -86400.5),
                     ("dec31", 1704067199.0), ("y2100", 4102444800.0), ("feb28_2023", 1677628799.0)):
        lb = dict(d)
        lb["which"] = which
        g.add("pq_date", lb, const(v))
    for zone in range(3):
        for rack in range(4):
            for sensor in range(2):
                g.add("pq_temperature",
                      {"job": "env", "instance": "e%d:9000" % zone, "zone": "z%d" % zone,
                       "rack": "r%d" % rack, "sensor": "s%d" % sensor},
                      walk(15, 45, 0.7, 3))
    for inst, role in (("h0:9100", "gpu"), ("h1:9100", "cpu"), ("h2:9100", "gpu"),
                       ("h3:9100", "cpu"), ("h3:9100", "storage")):
        g.add("machine_role", {"job": "cmdb", "instance": inst, "role": role}, const(1.0))
    for k, (src, path) in enumerate((("foo:123", "/api/v1/query"), ("bar:9", "/api/v1/write"),
                                      ("baz-1:7", "/-/ready"))):
        g.add("pq_labels", {"job": "labels", "instance": "l0:9000", "src": src, "dst": "d%d" % k,
                            "path": path}, const(float(k + 1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--end-ms", type=int, default=None)
    ap.add_argument("--hours", type=float, default=2.0)
    a = ap.parse_args()
    end_ms = a.end_ms
    if end_ms is None:
        end_ms = int(time.time()) // 60 * 60000 - 3 * 60000
    scrapes = int(a.hours * 3600000) // INTERVAL_MS
    start_ms = end_ms - scrapes * INTERVAL_MS
    g = Gen(start_ms, scrapes)
    build(g)
    n_samples = 0
    with open(a.out, "w") as f:
        for name, labels, pts in g.series:
            head = fmt_labels(name, labels)
            for t, v in pts:
                f.write("%s %d %s\n" % (head, t, fmt_value(v)))
            n_samples += len(pts)
    stale_case = [p for nm, lb, p in g.series if nm == "pq_intermittent" and lb["case"] == "stale_stop"][0]
    meta = {
        "start_ms": start_ms,
        "end_ms": end_ms,
        "interval_ms": INTERVAL_MS,
        "scrapes": scrapes,
        "series": len(g.series),
        "samples": n_samples,
        "sample_ts": {str(j): g.ts("node", "h0:9100", j) for j in (1, 100, 240, 300, 301, scrapes - 1)},
        "stale_ts": stale_case[-1][0],
        "gap_mid_ts": g.ts("batch", "b0:9000", 220),
        "edge_ts": g.ts("batch", "b0:9000", 240) + 300000,
        "w4_ms": g.ts("node", "h0:9100", 240) - g.ts("node", "h0:9100", 236),
    }
    with open(a.meta, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print("promql_data: %d series, %d samples, %d .. %d" % (len(g.series), n_samples, start_ms, end_ms),
          file=sys.stderr)


if __name__ == "__main__":
    main()
