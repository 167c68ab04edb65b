#!/usr/bin/env bash
# check_report_html.sh - renders a `gpuwatch report --format html` page in
# headless Chromium and checks what the browser built, not the bytes:
# every section (sec-*), every table and every chart the file declares,
# plus the sections and charts every report has, are in the rendered DOM,
# and each chart's SVG has drawn marks (a chart that says "none in this
# range" only its frame). Saves a screenshot.
#
# Usage: tests/check_report_html.sh FILE.html OUT.png
# Exit 0 when all is there; 1 naming what is missing (a missing chromium
# is a failure, not a skip); 2 on a usage error.
# Environment: CHROMIUM (default: chromium on PATH, else /usr/bin/chromium),
# CHROMIUM_TIMEOUT seconds per run (default 90).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 FILE.html OUT.png" >&2
    exit 2
fi
html=$1
png=$2
if [ ! -r "$html" ]; then
    echo "check_report_html: cannot read $html" >&2
    exit 1
fi
chromium=${CHROMIUM:-$(command -v chromium || true)}
[ -n "$chromium" ] || chromium=/usr/bin/chromium
if [ ! -x "$chromium" ]; then
    echo "check_report_html: FAIL: chromium not found (set CHROMIUM=/path/to/chromium)" >&2
    exit 1
fi
if ! command -v python3 >/dev/null; then
    echo "check_report_html: FAIL: python3 not found (needed to read the DOM)" >&2
    exit 1
fi
limit=${CHROMIUM_TIMEOUT:-90}
abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_report_html.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

run_chromium() {   # args: what, chromium arguments...
    local what=$1
    shift
    if ! timeout --kill-after=10 "$limit" "$chromium" --headless=new --no-sandbox --disable-gpu \
        --no-first-run --no-default-browser-check --disable-extensions --hide-scrollbars \
        --user-data-dir="$tmp/profile-$what" "$@" "file://$abs" >"$tmp/$what.out" 2>"$tmp/$what.err"; then
        echo "check_report_html: FAIL: chromium ($what) failed or timed out after ${limit}s:" >&2
        tail -n 20 "$tmp/$what.err" >&2
        return 1
    fi
}

run_chromium dom --dump-dom
run_chromium shot --screenshot="$tmp/shot.png" --window-size=1400,2400
if [ ! -s "$tmp/shot.png" ] || [ "$(head -c 4 "$tmp/shot.png" | od -An -c | tr -d ' ')" != '211PNG' ]; then
    echo "check_report_html: FAIL: chromium wrote no PNG screenshot" >&2
    tail -n 20 "$tmp/shot.err" >&2
    exit 1
fi
cp "$tmp/shot.png" "$png"

python3 - "$html" "$tmp/dom.out" <<'EOF'
import re, sys
from html.parser import HTMLParser

SECTIONS = ["sec-summary", "sec-failures", "sec-checkpoints", "sec-nodes", "sec-retries", "sec-goodput"]
CHARTS = ["chart-timeline", "chart-ckpt", "chart-lemons", "chart-retries"]
MARKS = {"circle", "rect", "line", "path", "polyline", "polygon", "ellipse"}

class Dom(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = {}          # id -> tag
        self.svg_stack = []    # ids of open charts
        self.marks = {}        # chart id -> drawn marks inside it
        self.empty = set()     # charts saying "none in this range" (frame only)
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = tag
        if tag == "svg":
            self.svg_stack.append(a.get("id", ""))
            self.marks.setdefault(a.get("id", ""), 0)
        elif tag in MARKS and self.svg_stack:
            self.marks[self.svg_stack[-1]] += 1
    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag == "svg":
            self.svg_stack.pop()
    def handle_data(self, data):
        if self.svg_stack and "none in this range" in data:
            self.empty.add(self.svg_stack[-1])
    def handle_endtag(self, tag):
        if tag == "svg" and self.svg_stack:
            self.svg_stack.pop()

src = open(sys.argv[1], encoding="utf-8").read()
dom_text = open(sys.argv[2], encoding="utf-8").read()
dom = Dom()
dom.feed(dom_text)
declared = re.findall(r'<(?:table|svg|section)\b[^>]*\bid="([^"]+)"', src)
want = [("section", s) for s in SECTIONS] + [("svg", c) for c in CHARTS]
for i in declared:
    kind = "table" if i.startswith("tbl-") else "svg" if i.startswith("chart-") else "section"
    if (kind, i) not in want:
        want.append((kind, i))
missing = []
for kind, i in want:
    if dom.ids.get(i) != kind:
        missing.append(f"{kind} #{i}" + ("" if i not in dom.ids else f" (found as <{dom.ids[i]}>)"))
empty = [c for kind, c in want
         if kind == "svg" and c in dom.ids and dom.marks.get(c, 0) < (1 if c in dom.empty else 2)]
if "<script" in dom_text.lower() and "<script" not in src.lower():
    missing.append("the page grew a script")
ntab = sum(1 for k, _ in want if k == "table")
if missing or empty:
    for m in missing:
        print(f"check_report_html: FAIL: missing in the rendered DOM: {m}", file=sys.stderr)
    for c in empty:
        print(f"check_report_html: FAIL: chart #{c} has no drawn marks", file=sys.stderr)
    sys.exit(1)
print(f"check_report_html: ok: {len(SECTIONS)} sections, {ntab} tables, "
      f"{sum(1 for k, _ in want if k == 'svg')} charts "
      f"({', '.join(f'{c}: ' + ('empty' if c in dom.empty else f'{dom.marks.get(c, 0)} marks') for k, c in want if k == 'svg')})")
EOF
echo "check_report_html: screenshot $png"
