#!/usr/bin/env bash
# run_ledger_bench.sh - the node ledger (D8) and `gpuwatch report` on
# simulated histories.
#
# 1. Accuracy: `gpuwatch evaluate --ledger` on the paper profile (63 nodes,
#    55 days) for SEEDS: sessions found against the simulated ones
#    (precision, recall), retry chains' success and median interval beside
#    the truth's, the ranks of the lemon nodes, exclusion concentration and
#    evidence (src/eval/ledger.c has the rules).
# 2. Speed: one seed (the first of SEEDS) is run again with --history-dir,
#    which keeps what serve keeps (the alert log, gpuwatch_node_activity,
#    D7's checkpoint events) in a data dir; then `gpuwatch report` renders
#    that 55-day history as HTML and as Markdown, and `gpuwatch exclusions
#    --data-dir` answers, each timed (wall clock, best of RUNS).
#
# Usage: bench/run_ledger_bench.sh [--build DIR] [--seeds 11,12,13] [--days 55]
#          [--runs 3] [--out FILE] [--keep DIR] [--history DIR]
# --history DIR: time the report on a history written before (by
# `gpuwatch evaluate --ledger --seed N --history-dir DIR`); skips 1 and 2.
# The report of the timed run is kept as FILE.html next to --out when given.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build
seeds=11,12,13
days=55
runs=3
out=
keep=
history=
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --history) history=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "run_ledger_bench: unknown option $1" >&2; exit 2 ;;
    esac
done
gw=$build/gpuwatch
[ -x "$gw" ] || { echo "run_ledger_bench: no $gw (build first)" >&2; exit 1; }
work=${keep:-$(mktemp -d /tmp/gw-ledger-bench.XXXXXX)}
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
log() { echo "$@" | tee -a "$work/summary.txt"; }

log "# ledger bench $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, gpuwatch $("$gw" --version 2>/dev/null | head -1)"
if [ -z "$history" ]; then
    log "## accuracy: gpuwatch evaluate --ledger --days $days --seeds $seeds"
    "$gw" evaluate --ledger --days "$days" --seeds "$seeds" | tee -a "$work/summary.txt"
    first=${seeds%%,*}
    hist=$work/history
    rm -rf "$hist"
    log "## history: gpuwatch evaluate --ledger --days $days --seed $first --history-dir $hist"
    t0=$(date +%s.%N)
    "$gw" evaluate --ledger --days "$days" --seed "$first" --history-dir "$hist" > /dev/null
    t1=$(date +%s.%N)
    log "history written in $(echo "$t1 - $t0" | bc) s"
else
    hist=$history
fi
log "history $hist: $(du -sh "$hist" | cut -f1) on disk"

best() {   # best wall time of RUNS runs of "$@"
    local b=
    for _ in $(seq "$runs"); do
        local s e d
        s=$(date +%s.%N)
        "$@" > /dev/null
        e=$(date +%s.%N)
        d=$(echo "$e - $s" | bc)
        if [ -z "$b" ] || [ "$(echo "$d < $b" | bc)" = 1 ]; then b=$d; fi
    done
    echo "$b"
}
html=$work/report.html
log "## speed (best of $runs)"
log "report html: $(best "$gw" report --data-dir "$hist" --format html --out "$html") s ($(stat -c %s "$html") bytes)"
log "report md:   $(best "$gw" report --data-dir "$hist" --format md --out "$work/report.md") s ($(stat -c %s "$work/report.md") bytes)"
log "exclusions:  $(best "$gw" exclusions --data-dir "$hist" --format json) s"
if [ -n "$out" ]; then
    cp "$work/summary.txt" "$out"
    cp "$html" "${out%.*}.html"
fi
