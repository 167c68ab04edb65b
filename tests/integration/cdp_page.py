#!/usr/bin/env python3
"""cdp_page.py - opens one page in headless Chromium through the DevTools
protocol (a minimal WebSocket client on the standard library) and reports,
as JSON on stdout, what the browser saw:

  requests   every HTTP response of the page: url, status, mime type
  failed     requests that failed below HTTP (refused, blocked by CSP, ...)
  console    console errors and warnings, uncaught exceptions
  ready_ms   wall time from navigation until the wait expression held
  eval       the value of --eval after the wait (JSON-serialisable)
  hover      the value of --hover-eval after moving the mouse to the point
             {x, y} that --hover-expr returns (page coordinates)

Usage: cdp_page.py --chromium PATH --url URL [--size 1400x900]
       [--wait EXPR] [--eval EXPR] [--hover-expr EXPR --hover-eval EXPR]
       [--screenshot OUT.png] [--timeout SECS]
Chromium is started with its own temporary profile and stopped by PID.
Exit 0 after writing the report (the caller judges it), 1 when the page
never satisfied --wait or Chromium could not be driven.
"""
import argparse
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class WS:
    """A WebSocket client just big enough for the DevTools protocol."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise IOError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise IOError("websocket handshake refused: %r" % head[:200])
        self.buf = b""

    def send(self, text):
        data = text.encode()
        hdr = bytearray([0x81])
        n = len(data)
        if n < 126:
            hdr.append(0x80 | n)
        elif n < 65536:
            hdr.append(0x80 | 126)
            hdr += struct.pack(">H", n)
        else:
            hdr.append(0x80 | 127)
            hdr += struct.pack(">Q", n)
        mask = os.urandom(4)
        hdr += mask
        self.sock.sendall(bytes(hdr) + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise IOError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            if b1 & 0x80:
                mask = self._read(4)
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self._read(n)))
            else:
                payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise IOError("websocket closed by peer")
            if op in (0x9, 0xA):  # ping/pong: ignore
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate %r: %s" % (expr[:80], r["exceptionDetails"].get("text")))
        return r.get("result", {}).get("value")


def stop_browser(proc, profile_dir, secs):
    """SIGTERM, up to secs to exit, then SIGKILL; removes its profile."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(secs)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(profile_dir, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--url", required=True)
    ap.add_argument("--size", default="1400x900")
    ap.add_argument("--wait", default="document.readyState === 'complete'")
    ap.add_argument("--eval", default="null")
    ap.add_argument("--hover-expr")
    ap.add_argument("--hover-eval", default="null")
    ap.add_argument("--screenshot")
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.split("x"))
    prof = tempfile.mkdtemp(prefix="cdp_page.")
    port = free_port()
    proc = subprocess.Popen([a.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
                             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=%d" % port,
                             "--user-data-dir=" + prof, "--window-size=%d,%d" % (w, h), "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = {"url": a.url, "requests": [], "failed": [], "console": []}
    rc = 1
    try:
        deadline = time.time() + a.timeout
        target = None
        while time.time() < deadline and target is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=2) as r:
                    targets = [t for t in json.load(r) if t.get("type") == "page"]
                if targets:
                    target = targets[0]
            except OSError:
                time.sleep(0.2)
        if target is None:
            raise RuntimeError("chromium's DevTools endpoint did not come up")
        page = Page(WS(target["webSocketDebuggerUrl"]))
        for m in ("Network.enable", "Page.enable", "Runtime.enable", "Log.enable"):
            page.call(m)
        page.call("Emulation.setDeviceMetricsOverride", width=w, height=h, deviceScaleFactor=1, mobile=False)
        t0 = time.time()
        page.call("Page.navigate", url=a.url)
        ok = False
        while time.time() < deadline:
            try:
                if page.evaluate("Boolean(%s)" % a.wait):
                    ok = True
                    break
            except RuntimeError:
                pass
            time.sleep(0.2)
        report["ready_ms"] = round((time.time() - t0) * 1000) if ok else None
        report["ready"] = ok
        report["eval"] = page.evaluate(a.eval)
        if a.hover_expr:
            pt = page.evaluate(a.hover_expr)
            if pt:
                page.call("Input.dispatchMouseEvent", type="mouseMoved", x=pt["x"], y=pt["y"])
                time.sleep(0.3)
            report["hover"] = page.evaluate(a.hover_eval)
        if a.screenshot:
            shot = page.call("Page.captureScreenshot", format="png")
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        page.call("Runtime.evaluate", expression="1")  # drain pending events
        for ev in page.events:
            m, p = ev["method"], ev.get("params", {})
            if m == "Network.responseReceived":
                r = p["response"]
                report["requests"].append({"url": r["url"], "status": r["status"], "mime": r.get("mimeType")})
            elif m == "Network.loadingFailed":
                report["failed"].append({"type": p.get("type"), "error": p.get("errorText"),
                                         "blocked": p.get("blockedReason")})
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                report["console"].append("exception: %s %s" % (d.get("text"), d.get("exception", {}).get("description", "")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                report["console"].append("console.%s: %s" % (p["type"], " ".join(
                    str(x.get("value", x.get("description", ""))) for x in p.get("args", []))))
            elif m == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
                report["console"].append("log %s: %s %s" % (p["entry"]["level"], p["entry"].get("text"),
                                                            p["entry"].get("url", "")))
        rc = 0 if ok else 1
    except (RuntimeError, IOError, OSError) as e:
        report["error"] = str(e)
    finally:
        stop_browser(proc, prof, 10)
    json.dump(report, sys.stdout, indent=1)
    print()
    return rc


if __name__ == "__main__":
    sys.exit(main())
