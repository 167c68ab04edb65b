#!/usr/bin/env bash
# it_report.sh - `gpuwatch report` on a live data dir: a smoke simulation
# (4 nodes x 8 GPUs, 12 h, raised failure rate, mixed checkpoint
# bottlenecks) remote-written to `gpuwatch serve`; then, while serve keeps
# running on the dir,
#   1. `report` (Markdown to stdout, HTML to a file) exits 0, has every
#      section, and finds sessions, failures and checkpoints;
#   2. serve still takes writes and answers afterwards (the report is
#      read-only and holds no lock);
#   3. two runs over the same --from/--to give the same bytes apart from
#      the generated_at line; a narrower range is accepted, a bad one is a
#      usage error (exit 2);
#   4. headless Chromium renders the HTML with every section, table and
#      chart (tests/check_report_html.sh).
#
# Usage: bash it_report.sh <build_dir>
# Needs chromium (GW_ALLOW_SKIP=1 to skip when missing).
# Env: GW_IT_REPORT_HOURS (default 12), GW_IT_REPORT_SEED (default 5).
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"
gw_require_bin chromium

hours=${GW_IT_REPORT_HOURS:-12}
seed=${GW_IT_REPORT_SEED:-5}
interval_ms=30000
end_ms=$(( ($(date +%s) - 120) * 1000 ))
end_ms=$(( end_ms - end_ms % interval_ms ))
start_ms=$(( end_ms - hours * 3600000 ))
port=$(gw_free_port)
gw="http://127.0.0.1:$port"
data="$GW_TMP/gwdata"

gw_start_gpuwatch gw "$port" "$data"
gw_log "simulate --seed $seed --duration ${hours}h -> gpuwatch :$port"
"$GW_BIN" simulate --profile smoke --seed "$seed" --duration "${hours}h" --start "$start_ms" --failure-scale 40 \
    --checkpoint-bottleneck mixed --url "$gw/api/v1/write" --truth "$GW_TMP/truth.jsonl" \
    >"$GW_TMP/sim.out" 2>"$GW_TMP/sim.err" ||
    { cat "$GW_TMP/sim.out" "$GW_TMP/sim.err" >&2; gw_fail "simulate failed"; }
# the detectors judge a bucket once it is complete: give serve a moment to drain
sleep 3

# 1. both formats, next to the running serve
"$GW_BIN" report --data-dir "$data" >"$GW_TMP/r.md" 2>"$GW_TMP/r.err" ||
    { cat "$GW_TMP/r.err" >&2; gw_fail "report (md) failed"; }
"$GW_BIN" report --data-dir "$data" --out "$GW_TMP/r.html" --title "it_report <seed $seed>" 2>"$GW_TMP/r.err" ||
    { cat "$GW_TMP/r.err" >&2; gw_fail "report (html) failed"; }
[[ ! -e "$GW_TMP/r.html.tmp" ]] || gw_fail "report left r.html.tmp behind"
for s in "## Summary" "## Failures and how each was detected" "## Checkpoints" "## Exclusions and lemon ranking" \
         "## Retry chains and recovery" "## MTBF, goodput and GPU-hours lost per cause"; do
    grep -qF "$s" "$GW_TMP/r.md" || gw_fail "Markdown report lacks \"$s\""
done
for id in sec-summary sec-failures sec-checkpoints sec-nodes sec-retries sec-goodput chart-timeline chart-ckpt; do
    grep -q "id=\"$id\"" "$GW_TMP/r.html" || gw_fail "HTML report lacks #$id"
done
grep -qF '<title>it_report &lt;seed' "$GW_TMP/r.html" || gw_fail "the title is not escaped"
sessions=$(sed -n 's/^| sessions | \([0-9]*\):.*/\1/p' "$GW_TMP/r.md")
ckpts=$(sed -n 's/^| checkpoints | \([0-9]*\) |$/\1/p' "$GW_TMP/r.md")
gw_log "report: ${sessions:-?} sessions, ${ckpts:-?} checkpoints, $(grep -c . "$GW_TMP/r.md") lines of Markdown"
[[ "${sessions:-0}" -gt 0 ]] || gw_fail "no sessions in the report"
[[ "${ckpts:-0}" -gt 0 ]] || gw_fail "no checkpoints in the report"
grep -q '<table id="tbl-ckpts">' "$GW_TMP/r.html" || gw_fail "no checkpoint table"

# 2. serve unaffected
gw_alive gw || gw_fail "serve died"
code=$(gw_http_code GET "$gw/api/v1/query?query=up")
[[ "$code" == 200 ]] || gw_fail "serve answers $code to a query after the report"

# 3. deterministic over a fixed range; range checks
from=$(( start_ms / 1000 + 3600 ))
to=$(( end_ms / 1000 ))
"$GW_BIN" report --data-dir "$data" --from "$from" --to "$to" --format html >"$GW_TMP/a.html"
"$GW_BIN" report --data-dir "$data" --from "$from" --to "$to" --format html >"$GW_TMP/b.html"
diff <(grep -v generated_at "$GW_TMP/a.html") <(grep -v generated_at "$GW_TMP/b.html") >/dev/null ||
    gw_fail "two reports over the same range differ"
"$GW_BIN" report --data-dir "$data" --from -2h --to now >/dev/null || gw_fail "report --from -2h --to now failed"
rc=0
"$GW_BIN" report --data-dir "$data" --from now --to -1h >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || gw_fail "--from after --to: exit $rc, want 2"

# 4. what a browser builds
bash "$GW_IT_DIR/../check_report_html.sh" "$GW_TMP/r.html" "$GW_TMP/r.png" ||
    gw_fail "check_report_html.sh failed"
gw_stop gw || gw_fail "serve did not stop cleanly"
gw_log "ok"
