#!/usr/bin/env bash
# test-all.sh - what `make test` runs after the main build (Makefile, target
# test): the main tree's unit + integration tests, and the clang Release,
# ASan+UBSan and TSan trees with their unit tests.
#
# The three extra trees are compiled in the background at nice 19 while the
# main tests run: integration tests mostly wait on their peers (scrape
# intervals, outages, retries), so the compilers take the idle CPU and a
# test that needs the CPU gets it first (nice 19 has 1/70 of a nice-0
# task's weight). Their unit tests run afterwards, in the foreground. The
# build logs are in $BUILD/bg-<tree>.log; a failed build fails the run and
# prints its log's tail.
#
# Env (set by the Makefile): JOBS, BUILD, BUILD_CLANG, BUILD_ASAN,
# BUILD_TSAN. GW_TEST_BG=0 builds the trees one after another instead.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-build}
mkdir -p "$BUILD"

bg_pid=""
if [[ "${GW_TEST_BG:-1}" != 0 ]]; then
    (
        for t in build-clang-release-tree test-asan-tree test-tsan-tree; do
            if ! nice -n 19 make --no-print-directory "$t" JOBS="$JOBS" >"$BUILD/bg-$t.log" 2>&1; then
                echo "$t" >"$BUILD/bg-failed"
                exit 1
            fi
        done
    ) &
    bg_pid=$!
    rm -f "$BUILD/bg-failed"
fi
stop_bg() { [[ -z "$bg_pid" ]] || kill -- "$bg_pid" 2>/dev/null || true; }
trap stop_bg INT TERM

if ! (cd "$BUILD" && GW_ALLOW_SKIP=0 ctest --output-on-failure -j "$JOBS"); then
    stop_bg
    echo "test-all: the main tree's tests failed" >&2
    exit 1
fi

if [[ -n "$bg_pid" ]]; then
    echo "test-all: waiting for the clang Release, ASan and TSan builds"
    if ! wait "$bg_pid"; then
        t=$(cat "$BUILD/bg-failed" 2>/dev/null || echo "a background build")
        echo "test-all: $t failed; last lines of $BUILD/bg-$t.log:" >&2
        tail -40 "$BUILD/bg-$t.log" >&2 || true
        exit 1
    fi
fi

# The unit tests of the three trees (the trees are built: make only checks).
make --no-print-directory build-clang-release JOBS="$JOBS" || exit 1
make --no-print-directory test-asan JOBS="$JOBS" || exit 1
make --no-print-directory test-tsan JOBS="$JOBS" || exit 1
echo "test-all: passed"
