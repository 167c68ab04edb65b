#!/usr/bin/env python3
"""slow_clients.py - opens N connections to a server that stall mid-request
(half of them after part of the headers, half after the headers and half
of the declared body), touches --ready once all are open, holds them for
--hold seconds, then reports how many the server had closed meanwhile.

Usage: slow_clients.py --port P [--n 20] [--hold 10] --ready FILE
"""
import argparse
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--hold", type=float, default=10.0)
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()

    socks = []
    for i in range(a.n):
        s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
        if i % 2 == 0:
            # headers + half of a 1000-byte body, then silence
            s.sendall(b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                      b"X-Prometheus-Remote-Write-Version: 0.1.0\r\nContent-Length: 1000\r\n\r\n"
                      + b"\x00" * 500)
        else:
            # half a header block, then silence
            s.sendall(b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
        socks.append(s)
    with open(a.ready, "w") as f:
        f.write("%d\n" % len(socks))
    time.sleep(a.hold)
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    print("slow_clients: opened=%d closed_by_server=%d" % (len(socks), closed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
