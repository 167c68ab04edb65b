#!/usr/bin/env bash
# minimize.sh - folds what fuzzing found into a target's corpus, minimised.
# usage: tests/fuzz/minimize.sh BUILD_DIR TARGET [FOUND_DIR]
# FOUND_DIR defaults to $FUZZ_WORK/TARGET (run.sh's output). The corpus
# tests/corpus/TARGET keeps its named files (seed-*, crash-*, hand-written)
# and gets, in place of its previous 40-hex-digit files, the smallest set
# of inputs libFuzzer's merge finds covering every edge (-use_counters=0:
# edges, not hit counts, so the corpus stays small for the replay test).
set -eu
build=${1:?usage: minimize.sh BUILD_DIR TARGET [FOUND_DIR]}
t=${2:?usage: minimize.sh BUILD_DIR TARGET [FOUND_DIR]}
src=$(cd "$(dirname "$0")/../.." && pwd)
found=${3:-${FUZZ_WORK:-/dev/shm/gpuwatch-fuzz}/$t}
corpus=$src/tests/corpus/$t
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$corpus"
"$build/fuzz_$t" -merge=1 -use_counters=0 -timeout=5 -rss_limit_mb=2048 "$tmp" "$corpus" "$found" \
    >"$tmp.log" 2>&1 || { tail -20 "$tmp.log" >&2; rm -f "$tmp.log"; exit 1; }
rm -f "$tmp.log"
find "$corpus" -maxdepth 1 -type f -regextype posix-extended -regex '.*/[0-9a-f]{40}' -delete
declare -A kept
for f in "$corpus"/*; do
    [ -f "$f" ] && kept[$(sha1sum <"$f" | cut -c1-40)]=1
done
n=0
for f in "$tmp"/*; do
    [ -f "$f" ] || continue
    h=$(sha1sum <"$f" | cut -c1-40)
    [ -n "${kept[$h]:-}" ] && continue
    cp "$f" "$corpus/$h"
    n=$((n + 1))
done
echo "$t: $n found inputs kept; corpus $(find "$corpus" -type f | wc -l) files, $(du -sb "$corpus" | cut -f1) bytes"
