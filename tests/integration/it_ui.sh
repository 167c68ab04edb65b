#!/usr/bin/env bash
# it_ui.sh - the status page at / in headless Chromium, against a serve fed
# by a simulated cluster with failures injected (8 nodes x 8 GPUs, 4 hours,
# failure scale 100, a seed whose run has GPU- and node-level hardware
# failures):
#   1. /, /ui/app.js, /ui/app.css, /ui/favicon.svg answer 200 with their
#      Content-Type, Cache-Control no-cache, a Content-Security-Policy that
#      allows only this origin, nosniff; an unknown /ui/ file is a 404;
#   2. the page (driven over the DevTools protocol, cdp_page.py) becomes
#      ready, every request it made answered 2xx, nothing failed below HTTP
#      (a CSP block would), no console error or exception, and the page's
#      own counters agree (body[data-fetch-errors] = 0);
#   3. the grid marks every GPU the ground truth names as failed (and a
#      GPU of every node named by a node-level failure), read from the
#      hidden list #sick; hovering a marked GPU shows its evidence;
#   4. a GPU's charts load (?gpu=node/index) and the query box answers;
#   3b. Firefox (bidi_page.py, WebDriver BiDi) loads the same page with
#      every request 2xx, no console error and the same GPUs marked;
#   5. a synthetic 1000 x 8 fleet (?synthetic=1000x8) is drawn in under
#      GW_IT_UI_MAX_RENDER_MS (default 250 ms; about 10 ms on an idle machine) per refresh.
# Saves a screenshot of the page with a sick GPU's charts open; with
# GW_UI_SCREENSHOT=FILE it is copied there (docs/img/status-page.png).
#
# Usage: bash it_ui.sh <build_dir>
# Needs chromium (GW_ALLOW_SKIP=1 to skip when missing) and python3.
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"
chromium=${CHROMIUM:-$(command -v chromium || echo /usr/bin/chromium)}
gw_require_bin "$chromium"

seed=${GW_IT_UI_SEED:-4}
hours=4
max_render=${GW_IT_UI_MAX_RENDER_MS:-250}
interval_ms=30000
end_ms=$(( ($(date +%s) - 90) * 1000 ))
end_ms=$(( end_ms - end_ms % interval_ms ))
start_ms=$(( end_ms - hours * 3600000 ))
port=$(gw_free_port)
gw="http://127.0.0.1:$port"
cdp=(python3 "$GW_IT_DIR/cdp_page.py" --chromium "$chromium" --timeout 90)

gw_start_gpuwatch gw "$port" "$GW_TMP/data"
gw_log "simulate --seed $seed --nodes 8 --duration ${hours}h --failure-scale 100 -> :$port"
"$GW_BIN" simulate --profile smoke --seed "$seed" --nodes 8 --duration "${hours}h" --start "$start_ms" \
    --failure-scale 100 --url "$gw/api/v1/write" --truth "$GW_TMP/truth.jsonl" >"$GW_TMP/sim.out" 2>&1 ||
    { cat "$GW_TMP/sim.out" >&2; gw_fail "simulate failed"; }
grep '^failures:' "$GW_TMP/sim.out" >&2

# 1. the files and their headers
for path in / /ui/app.js /ui/app.css /ui/favicon.svg; do
    hdr=$(curl -s -D - -o "$GW_TMP/body" --max-time 10 "$gw$path" | tr -d '\r')
    case $path in
        /) want='text/html; charset=utf-8' ;;
        *.js) want='text/javascript; charset=utf-8' ;;
        *.css) want='text/css; charset=utf-8' ;;
        *.svg) want='image/svg+xml' ;;
    esac
    grep -q '^HTTP/1.1 200' <<<"$hdr" || gw_fail "GET $path: $(head -1 <<<"$hdr")"
    grep -qix "content-type: $want" <<<"$hdr" || gw_fail "GET $path: Content-Type is not '$want': $hdr"
    grep -qix 'cache-control: no-cache' <<<"$hdr" || gw_fail "GET $path: no Cache-Control: no-cache"
    grep -qix "content-security-policy: default-src 'self';.*frame-ancestors 'none'" <<<"$hdr" ||
        gw_fail "GET $path: no self-only Content-Security-Policy: $hdr"
    grep -qix 'x-content-type-options: nosniff' <<<"$hdr" || gw_fail "GET $path: no nosniff"
    [[ -s "$GW_TMP/body" ]] || gw_fail "GET $path: empty body"
done
code=$(gw_http_code GET "$gw/ui/nope.js")
[[ "$code" == 404 ]] || gw_fail "GET /ui/nope.js answered $code, want 404"
code=$(gw_http_code POST "$gw/")
[[ "$code" == 405 ]] || gw_fail "POST / answered $code, want 405"
if grep -Eq 'https?://|//[a-z]' <(curl -s "$gw/" "$gw/ui/app.css"); then
    gw_fail "the page or its style sheet refers to another origin"
fi
gw_log "headers: ok (/, app.js, app.css, favicon.svg; 404 and 405)"

# the GPUs and nodes the ground truth names as failed inside the run
python3 - "$GW_TMP/truth.jsonl" "$end_ms" >"$GW_TMP/want.json" <<'PY'
import json, sys
end_ms = int(sys.argv[2])
gpus, nodes, hw = set(), set(), []
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("type") != "failure" or o["class"] == "collective":
        continue                      # collective bursts are job-level notices, not a GPU's fault
    if o["t_fault"] > end_ms - 10 * 60000:
        continue                      # too close to the end for the detectors to have judged it
    if o["gpu"] is None:
        nodes.add(o["node"])
    else:
        gpus.add("%s/%d" % (o["node"], o["gpu"]))
        if o["class"] != "app_xid":
            hw.append("%s/%d" % (o["node"], o["gpu"]))
show = hw[0] if hw else (sorted(gpus) or [""])[0]   # the GPU whose charts the screenshot shows
print(json.dumps({"gpus": sorted(gpus), "nodes": sorted(nodes), "show": show}))
PY
gw_log "ground truth: $(cat "$GW_TMP/want.json")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["gpus"] else 1)' "$GW_TMP/want.json" ||
    gw_fail "the truth names no failed GPU inside the run (change GW_IT_UI_SEED)"
first_gpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["show"])' "$GW_TMP/want.json")

ready="document.body.dataset.state === 'ready'"
page_eval='(() => ({
  fetches: +document.body.dataset.fetches, errors: +document.body.dataset.fetchErrors,
  lastError: document.body.dataset.lastError || "",
  nodes: +document.getElementById("grid").dataset.nodes, gpus: +document.getElementById("grid").dataset.gpus,
  sick: Array.from(document.querySelectorAll("#sick li")).map((li) => [li.dataset.node, li.dataset.gpu, li.dataset.state]),
  alerts: document.querySelectorAll("#alerts-body tr[data-alert]").length,
  checkpoints: document.querySelectorAll("#ckpt-body tr[data-diagnosis]").length }))()'
# the pixel centre of the first wanted GPU's cell, from the page's layout
hover_expr="(() => { const [n, g] = '$first_gpu'.split('/'); const L = S.layout, i = S.index.get(n);
  const r = document.getElementById('grid').getBoundingClientRect();
  return { x: r.left + (i % L.cols) * L.tileW + (+g) * (L.cell + L.gap) + L.cell / 2,
           y: r.top + Math.floor(i / L.cols) * L.tileH + L.label + L.cell / 2 }; })()"
hover_eval="(() => { const t = document.getElementById('tip'); return { shown: !t.hidden, text: t.textContent }; })()"

check_report() { # FILE WHAT: every request 2xx, nothing failed, no console error
    python3 - "$1" "$2" <<'PY'
import json, sys
r, what = json.load(open(sys.argv[1])), sys.argv[2]
bad = []
if not r.get("ready"):
    bad.append("the page never became ready (%s)" % r.get("error", "timeout"))
for q in r["requests"]:
    if not 200 <= q["status"] < 300:
        bad.append("request %s answered %d" % (q["url"], q["status"]))
for f in r["failed"]:
    bad.append("request failed: %s" % f)
for c in r["console"]:
    bad.append(c)
e = r.get("eval") or {}
if e.get("errors"):
    bad.append("the page counted %s failed request(s), last: %s" % (e["errors"], e.get("lastError")))
if len(r["requests"]) < 4:
    bad.append("only %d requests seen" % len(r["requests"]))
for b in bad:
    print("FAIL %s: %s" % (what, b))
if bad:
    sys.exit(1)
print("OK %s: ready in %s ms, %d requests all 2xx, no console error" % (what, r.get("ready_ms"), len(r["requests"])))
PY
}

# 2 + 3. the fleet page
"${cdp[@]}" --url "$gw/?window=24h" --wait "$ready" --eval "$page_eval" --hover-expr "$hover_expr" \
    --hover-eval "$hover_eval" >"$GW_TMP/page.json" || { cat "$GW_TMP/page.json" >&2; gw_fail "the page did not load"; }
check_report "$GW_TMP/page.json" "fleet page" || gw_fail "the fleet page had failed requests or errors"
python3 - "$GW_TMP/page.json" "$GW_TMP/want.json" "$first_gpu" <<'PY' || gw_fail "the grid does not mark the ground truth's failed GPUs"
import json, sys
r, want, first = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
e = r["eval"]
sick = {"%s/%s" % (n, g): s for n, g, s in e["sick"]}
bad = 0
if e["nodes"] < 8 or e["gpus"] < 64:
    print("FAIL grid: %d nodes, %d GPUs; want 8 x 8" % (e["nodes"], e["gpus"]))
    bad += 1
for g in want["gpus"]:
    if g in sick:
        print("OK grid: %s marked %s" % (g, sick[g]))
    else:
        print("FAIL grid: %s failed in the truth but is not marked" % g)
        bad += 1
for n in want["nodes"]:
    marked = sorted(k for k in sick if k.split("/")[0] == n)
    if marked:
        print("OK grid: node %s marked (%d GPUs, %s)" % (n, len(marked), sick[marked[0]]))
    else:
        print("FAIL grid: node %s failed in the truth but none of its GPUs is marked" % n)
        bad += 1
h = r.get("hover") or {}
node = first.split("/")[0]
if not h.get("shown") or node not in h.get("text", "") or "GPU " + first.split("/")[1] not in h.get("text", ""):
    print("FAIL hover: the tooltip over %s is %r" % (first, h))
    bad += 1
else:
    print("OK hover: %.160s" % h["text"])
print("grid: %d nodes, %d GPUs, %d marked; %d alert rows, %d checkpoint rows" %
      (e["nodes"], e["gpus"], len(sick), e["alerts"], e["checkpoints"]))
sys.exit(1 if bad else 0)
PY

# 3b. the same fleet page in Firefox (WebDriver BiDi, bidi_page.py): every
# request 2xx, no console error, the same GPUs marked as in Chromium
firefox=${FIREFOX:-$(command -v firefox-esr || command -v firefox || echo firefox-esr)}
gw_require_bin "$firefox"
python3 "$GW_IT_DIR/bidi_page.py" --firefox "$firefox" --timeout 90 --url "$gw/?window=24h" --wait "$ready" \
    --eval "$page_eval" >"$GW_TMP/page-ff.json" || { cat "$GW_TMP/page-ff.json" >&2; gw_fail "the page did not load in Firefox"; }
check_report "$GW_TMP/page-ff.json" "fleet page (Firefox)" || gw_fail "the fleet page had failed requests or errors in Firefox"
python3 - "$GW_TMP/page.json" "$GW_TMP/page-ff.json" <<'PY' || gw_fail "Firefox and Chromium disagree on the grid"
import json, sys
c, f = (json.load(open(p))["eval"] for p in sys.argv[1:3])
mark = lambda e: sorted("%s/%s" % (n, g) for n, g, _ in e["sick"])
if (c["nodes"], c["gpus"], mark(c)) != (f["nodes"], f["gpus"], mark(f)):
    print("FAIL firefox: grid %d x %d, marked %s; chromium %d x %d, marked %s" %
          (f["nodes"], f["gpus"], mark(f), c["nodes"], c["gpus"], mark(c)))
    sys.exit(1)
print("OK firefox: the same %d nodes, %d GPUs and %d marked GPUs as Chromium" % (f["nodes"], f["gpus"], len(mark(f))))
PY

# 4. a sick GPU's charts (the screenshot) and the query box
charts_eval='(async () => {
  for (let i = 0; i < 50 && !document.getElementById("charts").dataset.loaded; i++) await new Promise((r) => setTimeout(r, 100));
  const titles = Array.from(document.querySelectorAll("#charts h3")).map((h) => h.textContent);
  document.getElementById("q").value = "count by (hostname) (DCGM_FI_DEV_GPU_TEMP)";
  document.getElementById("qform").requestSubmit();
  for (let i = 0; i < 50 && !document.querySelector("#qout table, #qout .err"); i++) await new Promise((r) => setTimeout(r, 100));
  const fetches = +document.body.dataset.fetches, errors = +document.body.dataset.fetchErrors;
  return { loaded: document.getElementById("charts").dataset.loaded || "", titles, fetches, errors,
           lastError: document.body.dataset.lastError || "",
           qrows: document.querySelectorAll("#qout tbody tr").length, qerr: (document.querySelector("#qout .err") || {}).textContent || "" };
})()'
"${cdp[@]}" --url "$gw/?window=24h&gpu=$first_gpu" --size 1280x860 --wait "$ready" --eval "$charts_eval" \
    --screenshot "$GW_TMP/status-page.png" >"$GW_TMP/charts.json" || { cat "$GW_TMP/charts.json" >&2; gw_fail "the charts page did not load"; }
check_report "$GW_TMP/charts.json" "charts page" || gw_fail "the charts page had failed requests or errors"
python3 - "$GW_TMP/charts.json" "$first_gpu" <<'PY' || gw_fail "charts or query box"
import json, sys
r, first = json.load(open(sys.argv[1])), sys.argv[2]
e = r["eval"]
bad = 0
if e["loaded"] != first:
    print("FAIL charts: loaded %r, want %s" % (e["loaded"], first)); bad += 1
with_value = [t for t in e["titles"] if not t.endswith("–")]
if len(e["titles"]) < 6 or len(with_value) < 5:
    print("FAIL charts: titles %s" % e["titles"]); bad += 1
else:
    print("OK charts: %s" % "; ".join(e["titles"]))
if e["qrows"] != 8 or e["qerr"]:
    print("FAIL query box: %d rows (want 8 nodes), error %r" % (e["qrows"], e["qerr"])); bad += 1
else:
    print("OK query box: %d rows" % e["qrows"])
sys.exit(1 if bad else 0)
PY
size=$(stat -c %s "$GW_TMP/status-page.png")
((size > 1000 && size < 200000)) || gw_fail "screenshot is $size bytes (want 1 kB .. 200 kB)"
if [[ -n "${GW_UI_SCREENSHOT:-}" ]]; then
    cp "$GW_TMP/status-page.png" "$GW_UI_SCREENSHOT"
    gw_log "screenshot ($size bytes) -> $GW_UI_SCREENSHOT"
fi

# 5. a synthetic 1000 x 8 fleet: drawing cost per refresh
big_eval='(() => { const t = []; for (let i = 0; i < 5; i++) { const t0 = performance.now(); drawGrid(); updateSickList(); t.push(performance.now() - t0); }
  t.sort((a, b) => a - b);
  return { median_ms: t[2], nodes: +document.getElementById("grid").dataset.nodes, gpus: +document.getElementById("grid").dataset.gpus,
           sick: document.querySelectorAll("#sick li").length, errors: +document.body.dataset.fetchErrors }; })()'
"${cdp[@]}" --url "$gw/?synthetic=1000x8" --size 1400x1000 --wait "$ready" --eval "$big_eval" \
    >"$GW_TMP/big.json" || { cat "$GW_TMP/big.json" >&2; gw_fail "the synthetic fleet page did not load"; }
check_report "$GW_TMP/big.json" "1000 x 8 page" || gw_fail "the 1000 x 8 page had failed requests or errors"
python3 - "$GW_TMP/big.json" "$max_render" <<'PY' || gw_fail "the 1000 x 8 grid is too slow or wrong"
import json, sys
e, limit = json.load(open(sys.argv[1]))["eval"], float(sys.argv[2])
ok = e["nodes"] >= 1000 and e["gpus"] >= 8000 and e["sick"] > 0 and e["median_ms"] < limit
print("%s 1000 x 8: %d nodes, %d GPUs, %d marked, grid + list redrawn in %.1f ms (limit %.0f)" %
      ("OK" if ok else "FAIL", e["nodes"], e["gpus"], e["sick"], e["median_ms"], limit))
sys.exit(0 if ok else 1)
PY

gw_stop gw 60 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS"
