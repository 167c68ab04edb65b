#!/usr/bin/env python3
"""bidi_page.py - opens one page in headless Firefox through WebDriver BiDi
(the WebSocket client of cdp_page.py) and reports, as JSON on stdout, what
the browser saw, in cdp_page.py's format:

  requests   every HTTP response of the page: url, status, mime type
  failed     requests that failed below HTTP (refused, blocked by CSP, ...)
  console    console errors and warnings, uncaught exceptions
  ready_ms   wall time from navigation until the wait expression held
  eval       the value of --eval after the wait (JSON-serialisable)

Usage: bidi_page.py --firefox PATH --url URL [--size 1400x900]
       [--wait EXPR] [--eval EXPR] [--screenshot OUT.png] [--timeout SECS]
Firefox is started with its own temporary profile and stopped by PID.
Exit 0 after writing the report (the caller judges it), 1 when the page
never satisfied --wait or Firefox could not be driven.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp_page import WS, free_port, stop_browser  # noqa: E402


class Session:
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
                if msg.get("type") == "error":
                    raise RuntimeError("%s: %s %s" % (method, msg.get("error"), msg.get("message")))
                return msg.get("result", {})
            if msg.get("type") == "event":
                self.events.append(msg)

    def evaluate(self, ctx, expr):
        r = self.call("script.evaluate", expression="(async () => JSON.stringify(await (%s)))()" % expr,
                      target={"context": ctx}, awaitPromise=True)
        if r.get("type") == "exception":
            raise RuntimeError("evaluate %r: %s" % (expr[:80], r.get("exceptionDetails", {}).get("text")))
        v = r.get("result", {})
        return json.loads(v["value"]) if v.get("type") == "string" else None


def wait_port(port, deadline):
    while time.time() < deadline:
        try:
            return WS("ws://127.0.0.1:%d/session" % port)
        except (IOError, OSError):
            time.sleep(0.3)
    raise RuntimeError("firefox's WebDriver BiDi endpoint did not come up")


def collect(report, events):
    for ev in events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "network.responseCompleted":
            r = p.get("response", {})
            report["requests"].append({"url": r.get("url"), "status": r.get("status"), "mime": r.get("mimeType")})
        elif m == "network.fetchError":
            report["failed"].append({"url": p.get("request", {}).get("url"), "error": p.get("errorText")})
        elif m == "log.entryAdded" and p.get("level") in ("error", "warn"):
            report["console"].append("%s %s: %s" % (p.get("type"), p.get("level"), p.get("text")))


def drive(a, port, report):
    w, h = (int(x) for x in a.size.split("x"))
    deadline = time.time() + a.timeout
    s = Session(wait_port(port, deadline))
    s.call("session.new", capabilities={})
    s.call("session.subscribe", events=["network.responseCompleted", "network.fetchError", "log.entryAdded"])
    ctx = s.call("browsingContext.getTree")["contexts"][0]["context"]
    s.call("browsingContext.setViewport", context=ctx, viewport={"width": w, "height": h})
    t0 = time.time()
    s.call("browsingContext.navigate", context=ctx, url=a.url, wait="complete")
    ok = False
    while time.time() < deadline:
        try:
            if s.evaluate(ctx, "Boolean(%s)" % a.wait):
                ok = True
                break
        except RuntimeError:
            pass
        time.sleep(0.2)
    report["ready_ms"] = round((time.time() - t0) * 1000) if ok else None
    report["ready"] = ok
    report["eval"] = s.evaluate(ctx, a.eval)
    if a.screenshot:
        shot = s.call("browsingContext.captureScreenshot", context=ctx)
        with open(a.screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    s.evaluate(ctx, "1")  # drain pending events
    collect(report, s.events)
    try:
        s.call("session.end")
    except (RuntimeError, IOError):
        pass
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--firefox", default=shutil.which("firefox-esr") or shutil.which("firefox") or "firefox")
    ap.add_argument("--url", required=True)
    ap.add_argument("--size", default="1400x900")
    ap.add_argument("--wait", default="document.readyState === 'complete'")
    ap.add_argument("--eval", default="null")
    ap.add_argument("--screenshot")
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    prof = tempfile.mkdtemp(prefix="bidi_page.")
    port = free_port()
    env = dict(os.environ, HOME=prof, MOZ_HEADLESS="1")
    proc = subprocess.Popen([a.firefox, "--headless", "--no-remote", "--profile", prof,
                             "--remote-debugging-port", str(port), "--remote-allow-hosts", "127.0.0.1",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    report = {"url": a.url, "browser": "firefox", "requests": [], "failed": [], "console": []}
    rc = 1
    try:
        rc = 0 if drive(a, port, report) else 1
    except (RuntimeError, IOError, OSError, KeyError, IndexError) as e:
        report["error"] = str(e)
    finally:
        stop_browser(proc, prof, 15)
    json.dump(report, sys.stdout, indent=1)
    print()
    return rc


if __name__ == "__main__":
    sys.exit(main())
