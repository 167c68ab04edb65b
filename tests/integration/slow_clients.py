#!/usr/bin/env python3
"""slow_clients.py - opens N connections to a server that misbehave, touches
--ready once all are open, holds them for --hold seconds, then reports how
many the server had closed meanwhile. --mode:
  stall   (default) half of them stop after part of the headers, half after
          the headers and half of the declared body;
  drip    a slow-loris upload: headers of a 100 kB write, then one body byte
          every 0.5 s (never idle long enough for an idle timeout);
  noread  a 2 kB receive buffer and a GET --path whose answer is large,
          never read (the server's send buffer fills).

Usage: slow_clients.py --port P [--n 20] [--hold 10] --ready FILE
                       [--mode stall|drip|noread] [--path /api/v1/...]
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
    ap.add_argument("--mode", choices=("stall", "drip", "noread"), default="stall")
    ap.add_argument("--path", default="/")
    a = ap.parse_args()

    socks = []
    for i in range(a.n):
        if a.mode == "noread":
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
            s.settimeout(5)
            s.connect(("127.0.0.1", a.port))
            s.sendall(b"GET " + a.path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            socks.append(s)
            continue
        s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
        if a.mode == "drip":
            s.sendall(b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                      b"X-Prometheus-Remote-Write-Version: 0.1.0\r\nContent-Length: 100000\r\n\r\n")
        elif i % 2 == 0:
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
    end = time.time() + a.hold
    while time.time() < end:
        time.sleep(0.5)
        if a.mode == "drip":
            for s in socks:
                try:
                    s.send(b"\x00")
                except OSError:
                    pass
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
