#!/usr/bin/env python3
"""powercut_restore.py - turn a directory into what a power cut would leave.

Reads the undo journal written by powercut_shim.c (see its header for the
format) for DIR, drops every entry a later sync covers, and undoes the rest:
  - writes (and truncations), newest first: the pre-image goes back and the
    file gets its size from before the write;
  - files and directories created since their directory's last fsync are
    removed.
With --torn SEED, a power cut that tore unsynced writes instead: for every
4 KiB page, a random prefix of its unsynced writes (in order) stays, the
rest is undone, and each file keeps the size it had after a random prefix
of its unsynced writes; created files stay when they still have a name.
Prints one line: "undone=N files=N created_removed=N kept=N".
Exit 1 when the journal holds an 'X' record (a writable shared mapping the
shim could not journal) or is torn itself.

Usage: powercut_restore.py --dir DIR --journal FILE [--torn SEED]
"""
import argparse
import os
import random
import shutil
import struct
import sys

HDR = struct.Struct("<IIQQQqQQqQII")
MAGIC = 0x31435047
PAGE = 4096


def read_journal(path):
    recs = []
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0
    while pos < len(buf):
        # The shim appends a whole record before the call it guards runs
        # (under its mutex), so a record cut short by the kill is the last
        # one and its write never started: it is dropped.
        if len(buf) - pos < HDR.size:
            print("powercut_restore: the last record is cut inside its header at %d (killed while "
                  "journaling; its write never ran): dropped" % pos, file=sys.stderr)
            break
        (magic, typ, seq, dev, ino, off, wlen, olen, old_size, upto, plen, _pad) = HDR.unpack_from(buf, pos)
        if magic != MAGIC:
            sys.exit("powercut_restore: bad record magic at %d" % pos)
        pos += HDR.size
        rpath = buf[pos:pos + plen].decode()
        pos += plen
        old = buf[pos:pos + olen]
        pos += olen
        if len(old) != olen or len(rpath.encode()) != plen:
            print("powercut_restore: the last record is cut inside its path or pre-image (killed "
                  "while journaling; its write never ran): dropped", file=sys.stderr)
            break
        recs.append(dict(type=chr(typ), seq=seq, key=(dev, ino), off=off, wlen=wlen, old=old,
                         old_size=old_size, upto=upto, path=rpath))
    return recs


def pending(recs):
    """The W and C records no later sync covers."""
    file_upto, dir_upto, all_upto = {}, {}, 0
    for r in recs:
        if r["type"] == "S":
            file_upto[r["key"]] = max(file_upto.get(r["key"], 0), r["upto"])
        elif r["type"] == "D":
            dir_upto[r["path"]] = max(dir_upto.get(r["path"], 0), r["upto"])
        elif r["type"] == "G":
            all_upto = max(all_upto, r["upto"])
        elif r["type"] == "X":
            sys.exit("powercut_restore: %s was mapped writable and shared; its writes are not journaled" % r["path"])
    ws, cs = [], []
    for r in recs:
        if r["seq"] < all_upto:
            continue
        if r["type"] == "W" and r["seq"] >= file_upto.get(r["key"], 0):
            ws.append(r)
        elif r["type"] == "C" and r["seq"] >= dir_upto.get(os.path.dirname(r["path"]), 0):
            cs.append(r)
    return ws, cs


def inode_paths(top):
    m = {}
    for d, _dirs, files in os.walk(top):
        for n in files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            m[(st.st_dev, st.st_ino)] = p
    return m


def undo_range(f, r, lo, hi):
    """Undo record r within bytes [lo, hi) of the file."""
    a, b = max(lo, r["off"]), min(hi, r["off"] + r["wlen"])
    if a >= b:
        return
    old_end = r["off"] + len(r["old"])
    if a < old_end:
        e = min(b, old_end)
        f.seek(a)
        f.write(r["old"][a - r["off"]:e - r["off"]])
    if b > old_end and max(a, old_end) < os.fstat(f.fileno()).st_size:
        s = max(a, old_end)
        f.seek(s)
        f.write(b"\0" * (b - s))   # bytes that did not exist before read back as zeros


def restore_file(path, ws, rng):
    with open(path, "r+b") as f:
        if rng is None:
            for r in reversed(ws):
                undo_range(f, r, r["off"], r["off"] + r["wlen"])
                f.truncate(r["old_size"])
            return len(ws), 0
        pages = {}
        for i, r in enumerate(ws):
            for p in range(r["off"] // PAGE, (r["off"] + r["wlen"] + PAGE - 1) // PAGE):
                pages.setdefault(p, []).append(i)
        undone = kept = 0
        for p, idx in pages.items():
            k = rng.randint(0, len(idx))          # writes idx[:k] reached the disk
            kept += k
            for i in reversed(idx[k:]):
                undo_range(f, ws[i], p * PAGE, (p + 1) * PAGE)
                undone += 1
        k = rng.randint(0, len(ws))
        if k < len(ws):
            f.truncate(ws[k]["old_size"])
        return undone, kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--journal", required=True)
    ap.add_argument("--torn", type=int)
    a = ap.parse_args()
    top = os.path.realpath(a.dir)
    ws, cs = pending(read_journal(a.journal)) if os.path.exists(a.journal) else ([], [])
    rng = random.Random(a.torn) if a.torn is not None else None
    byfile = {}
    for r in ws:
        byfile.setdefault(r["key"], []).append(r)
    paths = inode_paths(top)
    undone = kept = 0
    for key, rs in byfile.items():
        if key in paths:        # else the file was deleted since
            u, k = restore_file(paths[key], rs, rng)
            undone += u
            kept += k
    removed = 0
    if rng is None:
        for r in reversed(cs):
            p = r["path"]
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            if (st.st_dev, st.st_ino) != r["key"]:
                continue
            if os.path.isdir(p):
                shutil.rmtree(p)
            else:
                os.unlink(p)
            removed += 1
    print("undone=%d files=%d created_removed=%d kept=%d" % (undone, len(byfile), removed, kept))


if __name__ == "__main__":
    main()
