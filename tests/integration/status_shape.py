#!/usr/bin/env python3
"""status_shape.py - shape checks for it_ops.sh.

  status_shape.py compare NAME PROM.json GW.json
      Both are answers of /api/v1/status/NAME. Checks the envelope and that
      every key of Prometheus' data is in gpuwatch's with the same JSON type,
      recursively (list elements: the first element of each, when both have
      one). Documented differences: flags (each server lists its own flags:
      only "a map of strings" is compared), config (the YAML text differs).
  status_shape.py metrics FILE
      Every sample's family has a # HELP and a # TYPE line, each family's
      lines are contiguous, histograms have _bucket{le="+Inf"}, _sum, _count.
Exit 0 when fine, 1 with the reasons on stderr.
"""
import json
import re
import sys


def jtype(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "object"
    return "null"


def same_shape(p, g, path, errs):
    tp, tg = jtype(p), jtype(g)
    if tp != tg:
        errs.append(f"{path}: Prometheus has {tp}, gpuwatch {tg}")
        return
    if tp == "object":
        for k in p:
            if k not in g:
                errs.append(f"{path}.{k}: missing in gpuwatch")
            else:
                same_shape(p[k], g[k], f"{path}.{k}", errs)
        for k in g:
            if k not in p:
                errs.append(f"{path}.{k}: gpuwatch has a key Prometheus lacks")
    elif tp == "list" and p and g:
        same_shape(p[0], g[0], path + "[0]", errs)


def compare(name, pf, gf):
    p = json.load(open(pf))
    g = json.load(open(gf))
    errs = []
    for ans, who in ((p, "Prometheus"), (g, "gpuwatch")):
        if ans.get("status") != "success" or "data" not in ans:
            errs.append(f"{who}: not a success envelope: {ans}")
    if errs:
        return errs
    pd, gd = p["data"], g["data"]
    if name == "flags":
        for who, d in (("Prometheus", pd), ("gpuwatch", gd)):
            if jtype(d) != "object" or not all(isinstance(v, str) for v in d.values()):
                errs.append(f"{who}: flags is not a map of strings")
        return errs
    if name == "config":
        for who, d in (("Prometheus", pd), ("gpuwatch", gd)):
            if jtype(d) != "object" or list(d) != ["yaml"] or not isinstance(d["yaml"], str):
                errs.append(f'{who}: config is not {{"yaml": string}}')
        return errs
    same_shape(pd, gd, "data", errs)
    return errs


def metrics(f):
    errs = []
    helps, types, seen_done, current = {}, {}, set(), None
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
    hist = {}
    for line in open(f):
        line = line.rstrip("\n")
        if not line:
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            name = parts[2]
            (helps if parts[1] == "HELP" else types)[name] = parts[3] if len(parts) > 3 else ""
            if name != current:
                if name in seen_done:
                    errs.append(f"family {name} is split")
                if current:
                    seen_done.add(current)
                current = name
            continue
        m = sample.match(line)
        if not m:
            errs.append(f"bad line: {line}")
            continue
        name = m.group(1)
        fam = name
        for suf in ("_bucket", "_sum", "_count"):
            if name.endswith(suf) and name[: -len(suf)] in types and types[name[: -len(suf)]] == "histogram":
                fam = name[: -len(suf)]
                hist.setdefault(fam, set()).add(suf if suf != "_bucket" or 'le="+Inf"' not in line else "+Inf")
        if fam not in helps or fam not in types:
            errs.append(f"{name}: family {fam} lacks # HELP or # TYPE")
        if fam != current:
            errs.append(f"{name}: sample outside its family block")
    for fam, t in types.items():
        if t == "histogram" and fam in hist and not {"+Inf", "_sum", "_count"} <= hist[fam]:
            errs.append(f"histogram {fam} lacks +Inf, _sum or _count")
    return errs


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "compare":
        errs = compare(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 3 and sys.argv[1] == "metrics":
        errs = metrics(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for e in errs:
        print(e, file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
