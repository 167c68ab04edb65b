#!/usr/bin/env bash
# run.sh - run libFuzzer targets of a build dir over their seed corpora.
# usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
# Each target fuzz_<t> starts from tests/corpus/<t>/ and writes what it finds
# to $FUZZ_WORK/<t>/ (default /dev/shm/gpuwatch-fuzz, in memory), crashes to
# $FUZZ_WORK/artifacts/<t>/ and its log to $FUZZ_WORK/<t>.log. Exits non-zero
# when a target crashed, hung (-timeout=5), leaked or ran out of memory.
# Minimise into the seed dir afterwards with
#   build-fuzz/fuzz_<t> -merge=1 tests/corpus/<t> $FUZZ_WORK/<t>
set -u
build=${1:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}
secs=${2:?usage: run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${FUZZ_WORK:-/dev/shm/gpuwatch-fuzz}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in "$src"/tests/fuzz/fuzz_*.c; do
        n=$(basename "$f" .c)
        targets+=("${n#fuzz_}")
    done
fi
fail=0
for t in "${targets[@]}"; do
    bin=$build/fuzz_$t
    if [ ! -x "$bin" ]; then
        echo "run.sh: $bin is not built" >&2
        fail=1
        continue
    fi
    mkdir -p "$work/$t" "$work/artifacts/$t"
    seeds=()
    [ -d "$src/tests/corpus/$t" ] && seeds=("$src/tests/corpus/$t")
    echo "== fuzz_$t for ${secs}s (log $work/$t.log)"
    if ! "$bin" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/$t/" "$work/$t" "${seeds[@]}" >"$work/$t.log" 2>&1; then
        echo "fuzz_$t FAILED: see $work/$t.log and $work/artifacts/$t/" >&2
        fail=1
    fi
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$work/$t.log" | sed "s/^/  /"
done
exit $fail
