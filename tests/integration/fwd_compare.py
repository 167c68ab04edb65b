#!/usr/bin/env python3
"""fwd_compare.py - it_forward.sh's check that a forwarding destination holds
every sample of gpuwatch exactly once.

  fwd_compare.py GPUWATCH_EXPORT.om VM_EXPORT.jsonl

GPUWATCH_EXPORT.om: `gpuwatch export` output (OpenMetrics text, timestamps
in seconds with millisecond decimals). VM_EXPORT.jsonl: VictoriaMetrics'
/api/v1/export (one JSON object per series: metric, values, timestamps in
ms). Series gpuwatch writes itself (ALERTS, gpuwatch_*) are not forwarded
by default: they must be absent from the destination and are left out of
the comparison. Fails (exit 1) on any (series, timestamp) whose count in
the destination is not exactly 1 for a gpuwatch sample, or that exists in
the destination only; prints the totals.
"""
import collections
import json
import re
import sys

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+) (\S+)$')
PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def internal(name):
    return name == "ALERTS" or name.startswith("gpuwatch_")


def key(labels):
    return tuple(sorted(labels.items()))


def unescape(v):
    return bytes(v, "utf-8").decode("unicode_escape") if "\\" in v else v


def read_gpuwatch(path):
    seen = collections.defaultdict(list)   # series key -> timestamps
    keys = {}   # series text -> key (lines of one series follow each other)
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            series, _, rest = line.rstrip("\n").rpartition("} ")
            if not series:
                series, _, rest = line.rstrip("\n").partition(" ")
            else:
                series += "}"
            k = keys.get(series)
            if k is None:
                m = LINE.match(series + " 0 0")
                if not m:
                    sys.exit("fwd_compare: cannot parse gpuwatch line: %r" % line[:200])
                labels = {n: unescape(v) for n, v in PAIR.findall(m.group(3) or "")}
                labels["__name__"] = m.group(1)
                k = keys[series] = None if internal(m.group(1)) else key(labels)
                if k is None:
                    keys[series] = False
            if not k:
                continue
            seen[k].append(int(round(float(rest.split(" ")[1]) * 1000)))
    return seen


def read_vm(path):
    seen = {}
    leaked = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            o = json.loads(line)
            labels = o["metric"]
            if internal(labels.get("__name__", "")):
                leaked += len(o["timestamps"])
                continue
            seen.setdefault(key(labels), []).extend(o["timestamps"])
    return seen, leaked


def main():
    gw = read_gpuwatch(sys.argv[1])
    vm, leaked = read_vm(sys.argv[2])
    missing, dup, extra = [], [], []
    for k in set(gw) | set(vm):
        want = collections.Counter(gw.get(k, ()))
        got = collections.Counter(vm.get(k, ()))
        missing += [(k, t) for t in want if t not in got]
        dup += [(k, t) for t, n in got.items() if n > 1]
        extra += [(k, t) for t in got if t not in want]
    n_gw = sum(len(v) for v in gw.values())
    n_vm = sum(len(v) for v in vm.values())
    print("gpuwatch_samples=%d destination_samples=%d series=%d missing=%d duplicated=%d extra=%d internal_leaked=%d"
          % (n_gw, n_vm, len(gw), len(missing), len(dup), len(extra), leaked))
    for what, ks in (("missing", missing), ("duplicated", dup), ("extra", extra)):
        for k in ks[:5]:
            print("  %s: %s @ %d" % (what, dict(k[0]), k[1]))
    if missing or dup or extra or leaked or not gw:
        sys.exit(1)


if __name__ == "__main__":
    main()
