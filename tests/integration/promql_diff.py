#!/usr/bin/env python3
"""promql_diff.py - differential PromQL test: runs every expression of
promql_cases.txt against a reference server (a real Prometheus) and a
target (gpuwatch, or a second Prometheus to check the harness itself) and
compares the answers.

Usage:
  promql_diff.py --ref URL --target URL --meta meta.json
                 [--cases promql_cases.txt] [--only REGEX] [--verbose]
                 [--jobs 4] [--method POST|GET] [--max-fail-lines 6]

meta.json is written by promql_data.py (data start/end and a few exact
sample timestamps). Cases file: one expression per line; blank lines and
lines starting with '#' are ignored; a leading '!' marks an expression
that must fail on both servers (same errorType). Placeholders replaced
before sending: {{start}} {{early}} {{mid}} {{end}} (Unix seconds of the
data's start, start + 90 s, middle and end, 3 decimals) - for `@`;
{{w4}} (a duration in ms: a window of that length ending at the first
instant query time starts exactly on a sample of node_*{instance="h0:9100"}).

Every ordinary expression is run
  * as range queries (query_range) over several windows: aligned step that
    divides the range, a step below the scrape interval with a start not
    aligned to it, steps that do not divide the range, a coarse step over
    the whole data and beyond both ends, a fine step across the data end;
  * as instant queries (query) at: a sample timestamp exactly, 1 ms after
    it, between two scrapes, inside the long gap of one series, the stale
    marker's timestamp, exactly 5 min after the last sample of a stopped
    series, the data end, 200 s after it, 30 s after the start.
A must-fail expression is run once as an instant and once as a range query.

Comparison: status and errorType; resultType; label sets (as sets: a
matrix is keyed by label set, and so is an instant vector unless the
expression's outermost call is sort() or sort_desc(), where the order of
the values must match as well - ties may come in any order, so only the
value sequence is compared in order); timestamps exactly; values with a
relative tolerance of 1e-9, NaN equal to NaN, infinities equal only to the
same infinity. A case passes when all of its queries agree. Every failing
case is printed with a compact diff of its first differing queries, then
the failing cases are counted by kind of first difference (one example
each); the last line is `N passed, M failed`; the exit status is 1 if M > 0 (2 on a
usage or connection error).
"""
import argparse
import concurrent.futures
import http.client
import json
import math
import re
import sys
import threading
import time
import urllib.parse

REL_TOL = 1e-9


# ------------------------------------------------------------------ HTTP

class Client:
    """One keep-alive connection per thread and server."""

    def __init__(self, base, method, timeout):
        u = urllib.parse.urlsplit(base)
        if u.scheme != "http" or not u.hostname:
            raise SystemExit("promql_diff: only http://host:port URLs are supported: %s" % base)
        self.host = u.hostname
        self.port = u.port or 80
        self.prefix = u.path.rstrip("/")
        self.method = method
        self.timeout = timeout
        self.local = threading.local()

    def _conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.local.conn = c
        return c

    def get(self, path, params):
        body = urllib.parse.urlencode(params)
        for attempt in range(2):
            c = self._conn()
            try:
                if self.method == "GET":
                    c.request("GET", self.prefix + path + "?" + body)
                else:
                    c.request("POST", self.prefix + path, body=body,
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
                r = c.getresponse()
                data = r.read()
                return r.status, data
            except (http.client.HTTPException, OSError) as e:
                c.close()
                self.local.conn = None
                if attempt == 1:
                    return None, ("transport error: %s" % e).encode()
        return None, b"unreachable"


def answer(client, path, params):
    """Returns a normalised answer: dict with status, errorType, error,
    resultType, result; or a transport/JSON problem as status 'broken'."""
    code, data = client.get(path, params)
    if code is None:
        return {"status": "broken", "error": data.decode(errors="replace"), "http": None}
    try:
        doc = json.loads(data)
    except ValueError:
        return {"status": "broken", "http": code,
                "error": "HTTP %d, not JSON: %r" % (code, data[:200])}
    if not isinstance(doc, dict) or doc.get("status") not in ("success", "error"):
        return {"status": "broken", "http": code, "error": "HTTP %d, no status: %r" % (code, data[:200])}
    if doc["status"] == "error":
        return {"status": "error", "http": code, "errorType": doc.get("errorType"),
                "error": doc.get("error", "")}
    d = doc.get("data")
    if not isinstance(d, dict) or "resultType" not in d or "result" not in d:
        return {"status": "broken", "http": code, "error": "success without data.resultType/result"}
    return {"status": "success", "http": code, "resultType": d["resultType"], "result": d["result"]}


# ------------------------------------------------------------ comparison

def fval(s):
    """A JSON sample value (a string) as a float; None if it is not one."""
    if not isinstance(s, str):
        return None
    try:
        return float(s)      # accepts NaN, +Inf, -Inf
    except ValueError:
        return None


def same_value(a, b):
    if a == b:
        return True
    x, y = fval(a), fval(b)
    if x is None or y is None:
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= REL_TOL * max(abs(x), abs(y))


def lkey(metric):
    if not isinstance(metric, dict):
        return ("<bad metric %r>" % (metric,),)
    return tuple(sorted(metric.items()))


def lstr(key):
    """A label set for a diff line (values over 60 characters shortened)."""
    def short(v):
        v = str(v)
        return v if len(v) <= 60 else "%s...(%d chars)" % (v[:40], len(v))
    return "{" + ", ".join('%s="%s"' % (k, short(v)) for k, v in key) + "}"


def point(p):
    """[t, "v"] -> (t, v) or None."""
    if isinstance(p, list) and len(p) == 2:
        return p[0], p[1]
    return None


def keyed(result, field, diffs, who):
    out = {}
    if not isinstance(result, list):
        diffs.append("%s: result is not a list" % who)
        return out
    for s in result:
        if not isinstance(s, dict):
            diffs.append("%s: result entry is not an object" % who)
            continue
        k = lkey(s.get("metric"))
        if k in out:
            diffs.append("%s: label set %s appears twice" % (who, lstr(k)))
        out[k] = s.get(field)
    return out


def cmp_points(k, rp, gp, diffs):
    if not isinstance(rp, list) or not isinstance(gp, list):
        diffs.append("%s: values not a list" % lstr(k))
        return
    rmap = {}
    for p in rp:
        q = point(p)
        if q:
            rmap[q[0]] = q[1]
    gmap = {}
    for p in gp:
        q = point(p)
        if q is None:
            diffs.append("%s: bad point %r" % (lstr(k), p))
            continue
        gmap[q[0]] = q[1]
    missing = sorted(t for t in rmap if t not in gmap)
    extra = sorted(t for t in gmap if t not in rmap)
    bad = [(t, rmap[t], gmap[t]) for t in sorted(rmap) if t in gmap and not same_value(rmap[t], gmap[t])]
    if missing:
        diffs.append("%s: %d point(s) missing, first at %s (ref %s)" % (lstr(k), len(missing), missing[0],
                                                                          rmap[missing[0]]))
    if extra:
        diffs.append("%s: %d extra point(s), first at %s (got %s)" % (lstr(k), len(extra), extra[0],
                                                                        gmap[extra[0]]))
    if bad:
        t, a, b = bad[0]
        diffs.append("%s: %d value(s) differ, first at %s: ref %s got %s" % (lstr(k), len(bad), t, a, b))
    if not missing and not extra and not bad:
        if [point(p)[0] for p in rp if point(p)] != [point(p)[0] for p in gp if point(p)]:
            diffs.append("%s: points not in time order" % lstr(k))


def compare(ref, got, ordered):
    """List of differences (empty if the answers agree)."""
    diffs = []
    if ref["status"] == "broken":
        return ["reference: %s" % ref["error"]]
    if got["status"] == "broken":
        return ["target: %s" % got["error"]]
    if ref["status"] != got["status"]:
        if ref["status"] == "error":
            return ["ref error (%s: %s), target succeeded (%s)" % (ref["errorType"], ref["error"],
                                                                  got["resultType"])]
        return ["ref succeeded (%s), target error (%s: %s)" % (ref["resultType"], got["errorType"], got["error"])]
    if ref["status"] == "error":
        if ref["errorType"] != got["errorType"]:
            diffs.append("errorType: ref %s (%s), got %s (%s)" % (ref["errorType"], ref["error"],
                                                                 got["errorType"], got["error"]))
        return diffs
    if ref["resultType"] != got["resultType"]:
        return ["resultType: ref %s, got %s" % (ref["resultType"], got["resultType"])]
    rt = ref["resultType"]
    if rt in ("scalar", "string"):
        r, g = point(ref["result"]), point(got["result"])
        if r is None or g is None:
            return ["bad %s result: ref %r got %r" % (rt, ref["result"], got["result"])]
        if r[0] != g[0]:
            diffs.append("timestamp: ref %s got %s" % (r[0], g[0]))
        if not (same_value(r[1], g[1]) if rt == "scalar" else r[1] == g[1]):
            diffs.append("value: ref %s got %s" % (r[1], g[1]))
        return diffs
    field = "values" if rt == "matrix" else "value"
    rk = keyed(ref["result"], field, diffs, "ref")
    gk = keyed(got["result"], field, diffs, "target")
    missing = [k for k in rk if k not in gk]
    extra = [k for k in gk if k not in rk]
    if missing:
        diffs.append("%d series missing, e.g. %s" % (len(missing), lstr(sorted(missing)[0])))
    if extra:
        diffs.append("%d extra series, e.g. %s" % (len(extra), lstr(sorted(extra)[0])))
    for k in sorted(k for k in rk if k in gk):
        if rt == "matrix":
            cmp_points(k, rk[k], gk[k], diffs)
        else:
            r, g = point(rk[k]), point(gk[k])
            if r is None or g is None:
                diffs.append("%s: bad sample ref %r got %r" % (lstr(k), rk[k], gk[k]))
            elif r[0] != g[0]:
                diffs.append("%s: timestamp ref %s got %s" % (lstr(k), r[0], g[0]))
            elif not same_value(r[1], g[1]):
                diffs.append("%s: value ref %s got %s" % (lstr(k), r[1], g[1]))
    if ordered and rt == "vector" and not diffs:
        rv = [point(s.get("value"))[1] for s in ref["result"]]
        gv = [point(s.get("value"))[1] for s in got["result"]]
        for i, (a, b) in enumerate(zip(rv, gv)):
            if not same_value(a, b):
                diffs.append("order: position %d has ref %s got %s (ref order %s)" %
                             (i, a, b, ", ".join(rv[:8])))
                break
    return diffs


# ------------------------------------------------------------ the plan

def secs(ms):
    return "%.3f" % (ms / 1000.0)


def is_ordered(expr):
    """True when the outermost call is sort()/sort_desc() (after parens)."""
    e = expr.strip()
    while e.startswith("(") and matching_paren(e, 0) == len(e) - 1:
        e = e[1:-1].strip()
    m = re.match(r"(sort|sort_desc)\s*\(", e)
    if not m:
        return False
    return matching_paren(e, m.end() - 1) == len(e) - 1


def matching_paren(s, i):
    depth = 0
    quote = None
    j = i
    while j < len(s):
        c = s[j]
        if quote:
            if c == "\\":
                j += 1
            elif c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def plan(meta):
    s, e = meta["start_ms"], meta["end_ms"]
    ts = meta["sample_ts"]

    def up(ms, step_ms):
        return (ms + step_ms - 1) // step_ms * step_ms
    r1 = up(s + 600000, 60000)
    r3 = up(s + 2400000, 30000)
    ranges = [
        ("aligned 60s x 60", r1, r1 + 3600000, "60"),
        ("step 7s, start off-grid", s + 1800000 + 3300, s + 1800000 + 3300 + 600000, "7"),
        ("step 37s, does not divide", r3, r3 + 2999000, "37"),
        ("step 300s, whole data and beyond", s - 600000, e + 420000, "300"),
        ("step 15s across the end", e - 900000, e + 360000, "15"),
        ("step 1m30s over 80m", s + 1234567, s + 1234567 + 4800000, "1m30s"),
        ("step 2h, longer than the range", s + 3600000, s + 5400000, "7200"),
    ]
    instants = [
        ("at a sample timestamp", ts["240"]),
        ("1 ms after a sample", ts["240"] + 1),
        ("between two scrapes", (ts["300"] + ts["301"]) // 2),
        ("inside a series' long gap", meta["gap_mid_ts"]),
        ("at a stale marker", meta["stale_ts"]),
        ("at the lookback edge of a stopped series", meta["edge_ts"]),
        ("at the data end", e),
        ("200 s after the end", e + 200000),
        ("30 s after the start", s + 30000),
    ]
    return ranges, instants


def substitute(expr, meta):
    s, e = meta["start_ms"], meta["end_ms"]
    return (expr.replace("{{start}}", secs(s)).replace("{{end}}", secs(e))
            .replace("{{early}}", secs(s + 90000)).replace("{{w4}}", "%dms" % meta["w4_ms"])
            .replace("{{mid}}", secs((s + e) // 2 // 1000 * 1000)))


def load_cases(path, only):
    cases = []
    rx = re.compile(only) if only else None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            t = line.strip()
            if not t or t.startswith("#"):
                continue
            must_fail = t.startswith("!")
            if must_fail:
                t = t[1:].strip()
            if rx and not rx.search(t):
                continue
            cases.append({"line": n, "expr": t, "fail": must_fail})
    return cases


def run_case(case, meta, ref, tgt, ranges, instants):
    expr = substitute(case["expr"], meta)
    ordered = is_ordered(expr)
    queries = []
    if case["fail"]:
        queries.append(("instant at the data end", "/api/v1/query", {"query": expr, "time": secs(meta["end_ms"])}))
        name, a, b, step = ranges[0]
        queries.append(("range " + name, "/api/v1/query_range",
                        {"query": expr, "start": secs(a), "end": secs(b), "step": step}))
    else:
        for name, a, b, step in ranges:
            queries.append(("range " + name, "/api/v1/query_range",
                            {"query": expr, "start": secs(a), "end": secs(b), "step": step}))
        for name, t in instants:
            queries.append(("instant " + name, "/api/v1/query", {"query": expr, "time": secs(t)}))
    failures = []
    ref_errors = 0
    ref_nonempty = 0
    for qname, path, params in queries:
        r = answer(ref, path, params)
        g = answer(tgt, path, params)
        if r["status"] == "error":
            ref_errors += 1
        elif r["status"] == "success" and (r["resultType"] in ("scalar", "string") or r["result"]):
            ref_nonempty += 1
        if case["fail"]:
            if r["status"] != "error":
                failures.append((qname, params, ["reference accepted a must-fail expression (%s)" %
                                                 r.get("resultType", r.get("error"))]))
                continue
            if g["status"] != "error":
                failures.append((qname, params, ["target accepted a must-fail expression (%s)" %
                                                 g.get("resultType", g.get("error"))]))
                continue
        d = compare(r, g, ordered and path == "/api/v1/query")
        if d:
            failures.append((qname, params, d))
    if not case["fail"] and ref_errors == len(queries):
        failures.insert(0, ("all", {}, ["the reference rejects this expression on every query; "
                                        "mark it with '!' or fix it"]))
    return {"case": case, "expr": expr, "failures": failures, "queries": len(queries),
            "ref_errors": ref_errors, "ref_nonempty": ref_nonempty}


def category(diff):
    """A failure's kind: its first diff line without label sets, numbers
    and quoted text, so similar failures count together."""
    c = re.sub(r"\{[^{}]*\}", "{..}", diff)
    c = re.sub(r'"[^"]*"', '".."', c)
    c = re.sub(r"[-+]?(\d+\.?\d*(e[-+]?\d+)?|NaN|Inf)", "N", c)
    return c[:110]


def main():
    ap = argparse.ArgumentParser(description="differential PromQL test (see the top of this file)")
    ap.add_argument("--ref", required=True, help="reference Prometheus base URL")
    ap.add_argument("--target", required=True, help="server under test base URL")
    ap.add_argument("--meta", required=True, help="meta.json from promql_data.py")
    ap.add_argument("--cases", default=None)
    ap.add_argument("--only", default=None, help="run only expressions matching this regex")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--method", choices=("POST", "GET"), default="POST")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--max-fail-lines", type=int, default=6)
    a = ap.parse_args()
    if a.cases is None:
        import os
        a.cases = os.path.join(os.path.dirname(os.path.abspath(__file__)), "promql_cases.txt")
    with open(a.meta) as f:
        meta = json.load(f)
    cases = load_cases(a.cases, a.only)
    if not cases:
        print("promql_diff: no cases", file=sys.stderr)
        return 2
    ref = Client(a.ref, a.method, a.timeout)
    tgt = Client(a.target, a.method, a.timeout)
    for c, name in ((ref, "reference"), (tgt, "target")):
        st, _ = c.get("/api/v1/query", {"query": "1", "time": secs(meta["end_ms"])})
        if st is None:
            print("promql_diff: %s %s is not reachable" % (name, c.host), file=sys.stderr)
            return 2
    ranges, instants = plan(meta)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        results = list(ex.map(lambda c: run_case(c, meta, ref, tgt, ranges, instants), cases))
    passed = failed = nq = empty = 0
    cats = {}
    for res in results:
        nq += res["queries"]
        c = res["case"]
        tag = "!" if c["fail"] else ""
        if not c["fail"] and res["ref_nonempty"] == 0:
            empty += 1
        if not res["failures"]:
            passed += 1
            if a.verbose:
                note = "" if c["fail"] or res["ref_nonempty"] else "   (empty on every query)"
                print("ok   line %d: %s%s%s" % (c["line"], tag, c["expr"], note))
            continue
        failed += 1
        k = category(res["failures"][0][2][0] if res["failures"][0][2] else "?")
        cats.setdefault(k, []).append(res["expr"])
        print("FAIL line %d: %s%s   (%d of %d queries differ)" % (c["line"], tag, res["expr"],
                                                                  len(res["failures"]), res["queries"]))
        shown = 0
        for qname, params, diffs in res["failures"]:
            if shown >= 3:
                break
            shown += 1
            where = qname
            if "time" in params:
                where += " time=%s" % params["time"]
            elif "start" in params:
                where += " start=%s end=%s step=%s" % (params["start"], params["end"], params["step"])
            print("     %s" % where)
            for d in diffs[:a.max_fail_lines]:
                print("       %s" % d)
            if len(diffs) > a.max_fail_lines:
                print("       ... %d more" % (len(diffs) - a.max_fail_lines))
    print("promql_diff: %d cases, %d queries per server, %.1f s; %d ordinary cases have an empty or "
          "error answer on every reference query" % (len(results), nq, time.monotonic() - t0, empty), file=sys.stderr)
    if cats:
        print("failure categories (first difference of each failing case):")
        for k, exprs in sorted(cats.items(), key=lambda kv: -len(kv[1])):
            print("  %4d  %s\n        e.g. %s" % (len(exprs), k, exprs[0]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
