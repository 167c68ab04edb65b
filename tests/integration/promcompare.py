#!/usr/bin/env python3
"""promcompare.py - compares the Prometheus HTTP API answers of two servers
(a reference Prometheus and gpuwatch, or two Prometheus) and prints clear
diffs. Numbers are compared as the exact strings the servers sent.

  pick-time --prom URL [--back 8]
      prints T (seconds, 3 decimals): `back` seconds before the newest
      scrape of `up`, halfway between two 1 s scrapes
  matrix --ref URL --got URL --query Q --time T [--wait 60]
      instant query (a range selector: raw samples) on both; equal label
      sets, timestamps and value strings
  range --ref URL --got URL --query Q --start S --end E --step D [--wait 60]
      /api/v1/query_range on both; equal
  meta --ref URL --got URL --start S --end E --query Q --time T
      series/labels/label values of got over [S, E] include everything the
      matrix answer of Q at T holds and nothing the reference never had

`got` is polled until it equals the reference or --wait seconds pass (the
remote-write path lags behind). Exit 0 when equal, 1 with diffs otherwise.
"""
import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def get(base, path, params):
    url = base.rstrip("/") + path + "?" + urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            body = r.read().decode()
            code = r.status
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace")
        code = e.code
    except (urllib.error.URLError, OSError) as e:
        return None, "request %s failed: %s" % (url, e)
    try:
        doc = json.loads(body, parse_float=str, parse_int=str)
    except ValueError:
        return None, "HTTP %d from %s, not JSON: %.300s" % (code, url, body)
    if code != 200 or doc.get("status") != "success":
        return None, "HTTP %d from %s: %.300s" % (code, url, body)
    return doc["data"], None


def key(metric):
    return "{" + ",".join('%s="%s"' % (k, metric[k]) for k in sorted(metric)) + "}"


def as_map(data):
    """matrix/vector result -> {series key: [(t, v), ...]}"""
    out = {}
    rtype = data.get("resultType")
    for s in data.get("result", []):
        k = key(s["metric"])
        if rtype == "matrix":
            pts = [(str(p[0]), p[1]) for p in s.get("values", [])]
        else:
            pts = [(str(s["value"][0]), s["value"][1])]
        if k in out:
            out[k].append(("DUPLICATE-SERIES", ""))
        out[k] = out.get(k, []) + pts
    return rtype, out


def diff(ref, got, max_lines=40):
    lines = []
    rtype_r, mr = ref
    rtype_g, mg = got
    if rtype_r != rtype_g:
        lines.append("resultType: reference %s, got %s" % (rtype_r, rtype_g))
    for k in sorted(set(mr) - set(mg)):
        lines.append("missing series %s (%d samples in the reference)" % (k, len(mr[k])))
    for k in sorted(set(mg) - set(mr)):
        lines.append("extra series %s (%d samples)" % (k, len(mg[k])))
    for k in sorted(set(mr) & set(mg)):
        a, b = mr[k], mg[k]
        if a == b:
            continue
        sa, sb = set(a), set(b)
        ta = {t: v for t, v in a}
        tb = {t: v for t, v in b}
        msg = ["series %s: reference %d samples, got %d" % (k, len(a), len(b))]
        for t in sorted(set(ta) - set(tb), key=float)[:3]:
            msg.append("    missing t=%s v=%s" % (t, ta[t]))
        for t in sorted(set(tb) - set(ta), key=float)[:3]:
            msg.append("    extra   t=%s v=%s" % (t, tb[t]))
        for t in sorted(set(ta) & set(tb), key=float):
            if ta[t] != tb[t]:
                msg.append("    t=%s: reference %s, got %s" % (t, ta[t], tb[t]))
                if len(msg) > 8:
                    break
        if sa == sb:
            msg.append("    same samples, different order or duplicates")
        # timestamps written differently but equal as numbers
        fa = {float(t): t for t in ta}
        for t in tb:
            if t not in ta and float(t) in fa:
                msg.append("    timestamp format differs: reference %s, got %s" % (fa[float(t)], t))
                break
        lines.extend(msg)
    return lines[:max_lines] + (["... %d more lines" % (len(lines) - max_lines)] if len(lines) > max_lines else [])


def poll_equal(desc, fetch_ref, fetch_got, wait):
    ref_data, err = fetch_ref()
    if err:
        print("FAIL %s: reference: %s" % (desc, err))
        return 1
    ref = as_map(ref_data)
    if not ref[1]:
        print("FAIL %s: the reference returned no series; nothing to compare" % desc)
        return 1
    deadline = time.time() + wait
    while True:
        got_data, err = fetch_got()
        if err:
            lines = ["request failed: " + err]
        else:
            lines = diff(ref, as_map(got_data))
        if not lines:
            n = sum(len(v) for v in ref[1].values())
            print("OK %s: %d series, %d samples equal" % (desc, len(ref[1]), n))
            return 0
        if time.time() >= deadline:
            print("FAIL %s: answers differ after waiting %ds:" % (desc, wait))
            for line in lines:
                print("  " + line)
            return 1
        time.sleep(1)


def cmd_pick_time(a):
    data, err = get(a.prom, "/api/v1/query", {"query": "up[10s]"})
    if err or not data["result"]:
        print("cannot read up[10s]: %s" % (err or "no series"), file=sys.stderr)
        return 1
    last = max(float(p[0]) for s in data["result"] for p in s["values"])
    print("%.3f" % (last - a.back + 0.5))
    return 0


def cmd_matrix(a):
    params = {"query": a.query, "time": a.time}
    return poll_equal("instant %s @%s" % (a.query, a.time),
                      lambda: get(a.ref, "/api/v1/query", params),
                      lambda: get(a.got, "/api/v1/query", params), a.wait)


def cmd_range(a):
    params = {"query": a.query, "start": a.start, "end": a.end, "step": a.step}
    return poll_equal("range %s [%s,%s] step %s" % (a.query, a.start, a.end, a.step),
                      lambda: get(a.ref, "/api/v1/query_range", params),
                      lambda: get(a.got, "/api/v1/query_range", params), a.wait)


def cmd_meta(a):
    fails = []
    mdata, err = get(a.ref, "/api/v1/query", {"query": a.query, "time": a.time})
    if err:
        print("FAIL meta: reference matrix: %s" % err)
        return 1
    msets = {key(s["metric"]) for s in mdata["result"]}
    mlabels = {k for s in mdata["result"] for k in s["metric"]}
    mnames = {s["metric"]["__name__"] for s in mdata["result"]}
    rng = {"start": a.start, "end": a.end}
    match = {"match[]": '{__name__=~".+"}'}
    # series the got side writes itself (gpuwatch's ALERTS) are left out of its answers
    got_match = {"match[]": '{__name__=~".+"%s}' % "".join(',__name__!="%s"' % n for n in a.exclude_got)}

    def check(what, inner, got, outer):
        if got is None:
            return
        miss = sorted(inner - got)
        extra = sorted(got - outer)
        if miss:
            fails.append("%s: %d missing, e.g. %s" % (what, len(miss), ", ".join(miss[:5])))
        if extra:
            fails.append("%s: %d never in the reference, e.g. %s" % (what, len(extra), ", ".join(extra[:5])))

    def fetch(base, path, params):
        d, e = get(base, path, params)
        if e:
            fails.append(e)
            return None
        return d

    gs = fetch(a.got, "/api/v1/series", dict(got_match, **rng))
    rs = fetch(a.ref, "/api/v1/series", match)
    if gs is not None and rs is not None:
        check("/api/v1/series", msets, {key(m) for m in gs}, {key(m) for m in rs})
    gl = fetch(a.got, "/api/v1/labels", dict(got_match, **rng) if a.exclude_got else rng)
    rl = fetch(a.ref, "/api/v1/labels", {})
    if gl is not None and rl is not None:
        check("/api/v1/labels", mlabels, set(gl), set(rl))
        if gl != sorted(gl):
            fails.append("/api/v1/labels not sorted")
    gv = fetch(a.got, "/api/v1/label/__name__/values", dict(got_match, **rng) if a.exclude_got else rng)
    rv = fetch(a.ref, "/api/v1/label/__name__/values", {})
    if gv is not None and rv is not None:
        check("/api/v1/label/__name__/values", mnames, set(gv), set(rv))
        if gv != sorted(gv):
            fails.append("/api/v1/label/__name__/values not sorted")
    if fails:
        print("FAIL meta:")
        for f in fails:
            print("  " + f)
        return 1
    print("OK meta: series %d, label names %d, metric names %d consistent" % (len(msets), len(mlabels), len(mnames)))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pick-time")
    p.add_argument("--prom", required=True)
    p.add_argument("--back", type=float, default=8)
    for name in ("matrix", "range", "meta"):
        p = sub.add_parser(name)
        p.add_argument("--ref", required=True)
        p.add_argument("--got", required=True)
        p.add_argument("--query", required=True)
        p.add_argument("--wait", type=int, default=60)
        if name in ("matrix", "meta"):
            p.add_argument("--time", required=True)
        if name == "meta":
            p.add_argument("--exclude-got", action="append", default=[],
                           help="a metric name the got side writes itself, left out of its answers")
        if name in ("range", "meta"):
            p.add_argument("--start", required=True)
            p.add_argument("--end", required=True)
        if name == "range":
            p.add_argument("--step", required=True)
    a = ap.parse_args()
    return {"pick-time": cmd_pick_time, "matrix": cmd_matrix, "range": cmd_range, "meta": cmd_meta}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
