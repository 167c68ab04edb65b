#!/usr/bin/env python3
"""dcgm_textfile.py - writes dcgm-exporter shaped series for N nodes x G GPUs
into DIR/dcgm.prom (node_exporter textfile collector format) and rewrites
it every --period seconds with changed values, atomically (tmp + rename).
Even nodes carry `hostname`, odd nodes the older `Hostname` label.

Usage: dcgm_textfile.py --dir DIR [--nodes 2] [--gpus 8] [--period 2] [--once]
                        [--xid-nodes 1] [--xid-from 10]
GPU 3 of each node in --xid-nodes (0-based indexes, comma-separated; ""
for none) reports XID 79 from rewrite --xid-from on, 0 before.
"""
import argparse
import math
import os
import sys
import time

FAMILIES = [
    # name, type, help, value(node, gpu, k)
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).",
     lambda n, g, k: "%d" % (45 + g + round(4 * math.sin(k / 7.0 + n)))),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).",
     lambda n, g, k: "%.3f" % (650 + 200 * math.sin(k / 5.0 + g) + 0.001 * ((n * 31 + g * 7 + k * 13) % 997))),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
     lambda n, g, k: "%d" % (123456789000 + n * 1000 + g * 100 + k * 1300000 + (k * 7919 + g) % 1000)),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
     lambda n, g, k: "79" if (n in XID_NODES and g == 3 and k >= XID_FROM) else "0"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.",
     lambda n, g, k: repr(0.5 + 0.49 * math.sin(k / 3.0 + g * 0.7 + n))),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
     lambda n, g, k: "%d" % (80000 + (k * 1543 + g * 97) % 20000)),
]
XID_NODES = {1}
XID_FROM = 10
BUS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]


def render(nodes, gpus, k):
    out = []
    for name, typ, hlp, fn in FAMILIES:
        out.append("# HELP %s %s" % (name, hlp))
        out.append("# TYPE %s %s" % (name, typ))
        for n in range(nodes):
            host_label = "hostname" if n % 2 == 0 else "Hostname"
            for g in range(gpus):
                labels = ('gpu="%d",UUID="GPU-%08x-1111-2222-3333-%012x",pci_bus_id="00000000:%s:00.0",'
                          'device="nvidia%d",modelName="NVIDIA B200",%s="gpu%03d",'
                          'DCGM_FI_DRIVER_VERSION="570.124.06"') % (
                    g, 0x1000 * (n + 1) + g, n * 8 + g, BUS[g % 8], g, host_label, n + 1)
                out.append("%s{%s} %s" % (name, labels, fn(n, g, k)))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--period", type=float, default=2.0)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--xid-nodes", default="1")
    ap.add_argument("--xid-from", type=int, default=10)
    a = ap.parse_args()
    global XID_FROM
    XID_NODES.clear()
    XID_NODES.update(int(x) for x in a.xid_nodes.split(",") if x.strip())
    XID_FROM = a.xid_from
    k = 0
    path = os.path.join(a.dir, "dcgm.prom")
    while True:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(render(a.nodes, a.gpus, k))
        os.rename(tmp, path)
        if a.once:
            return 0
        k += 1
        time.sleep(a.period)


if __name__ == "__main__":
    sys.exit(main())
