# shellcheck shell=bash
# lib.sh - shared helpers for the integration tests (tests/integration/it_*.sh).
#
# Usage at the top of a test:   source "$(dirname "$0")/lib.sh" "$@"
# The first argument is the CMake build directory holding gpuwatch and
# gw_rwload. Provides:
#   GW_BIN GW_LOAD GW_TMP        binaries and this test's temp dir (removed on exit)
#   gw_log MSG / gw_fail MSG     progress line / failure (exit 1)
#   gw_require_bin NAME          peer binary present, else FAIL, or SKIP (exit 77,
#                                ctest's SKIP_RETURN_CODE) when GW_ALLOW_SKIP=1
#   gw_free_port                 an unused TCP port on 127.0.0.1
#   gw_start NAME LOG CMD...     start CMD in the background, remember its PID as NAME
#   gw_pid NAME / gw_alive NAME  PID of NAME / is it running
#   gw_wait_http NAME URL [SECS] poll URL until HTTP 200 (fails early if NAME died)
#   gw_stop NAME [SECS]          SIGTERM, wait, then SIGKILL; returns the exit status
#   gw_wait NAME [SECS]          wait for NAME to exit by itself; returns its status
#   gw_kill9 NAME                SIGKILL and reap
#   gw_start_gpuwatch NAME PORT DATA_DIR [serve flags...]   start + wait for /-/ready
#   gw_http_code METHOD URL [curl args...]  prints the HTTP status code
# Every process started with gw_start is stopped by PID on exit; on failure
# the tails of their logs are printed. GW_KEEP_TMP=1 keeps the temp dir.

set -euo pipefail

GW_BUILD=${1:-}
if [[ -z "$GW_BUILD" ]]; then
    echo "usage: $0 <build_dir>" >&2
    exit 2
fi
GW_BUILD=$(cd "$GW_BUILD" && pwd)
GW_BIN="$GW_BUILD/gpuwatch"
GW_LOAD="$GW_BUILD/gw_rwload"
export GW_IT_DIR
GW_IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GW_TEST_NAME=$(basename "$0" .sh)

declare -A GW_PIDS=()
declare -A GW_LOGS=()

gw_log() { printf '[%s %s] %s\n' "$(date +%H:%M:%S)" "$GW_TEST_NAME" "$*" >&2; }

gw_fail() {
    printf 'FAIL: %s: %s\n' "$GW_TEST_NAME" "$*" >&2
    exit 1
}

mkdir -p "${GW_TEST_TMP:-/tmp}"
GW_TMP=$(mktemp -d "${GW_TEST_TMP:-/tmp}/gw-${GW_TEST_NAME}.XXXXXX")

gw_cleanup() {
    local rc=$?
    set +e
    local name pid
    for name in "${!GW_PIDS[@]}"; do
        pid=${GW_PIDS[$name]}
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null
        fi
    done
    local deadline=$((SECONDS + 10))
    for name in "${!GW_PIDS[@]}"; do
        pid=${GW_PIDS[$name]}
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null; fi
        wait "$pid" 2>/dev/null
    done
    if ((rc != 0)); then
        for name in "${!GW_LOGS[@]}"; do
            if [[ -s "${GW_LOGS[$name]}" ]]; then
                echo "----- last lines of $name log (${GW_LOGS[$name]}) -----" >&2
                tail -n 25 "${GW_LOGS[$name]}" >&2
            fi
        done
    fi
    if [[ "${GW_KEEP_TMP:-0}" == 1 ]]; then
        echo "kept $GW_TMP" >&2
    else
        rm -rf "$GW_TMP"
    fi
    return "$rc"
}
trap gw_cleanup EXIT
trap 'exit 130' INT TERM

gw_require_bin() {
    local name=$1
    if command -v "$name" >/dev/null 2>&1 || [[ -x "$name" ]]; then
        return 0
    fi
    if [[ "${GW_ALLOW_SKIP:-0}" == 1 ]]; then
        echo "SKIP: $GW_TEST_NAME: $name is not installed"
        exit 77
    fi
    gw_fail "$name is not installed (apt-get install it, or set GW_ALLOW_SKIP=1 to skip)"
}

gw_require_build() {
    [[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"
    [[ -x "$GW_LOAD" ]] || gw_fail "$GW_LOAD not built"
}

gw_free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

gw_start() {
    local name=$1 logf=$2
    shift 2
    "$@" >>"$logf" 2>&1 &
    GW_PIDS[$name]=$!
    GW_LOGS[$name]=$logf
}

gw_pid() { echo "${GW_PIDS[$1]}"; }

gw_alive() {
    local pid=${GW_PIDS[$1]:-}
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

gw_wait_http() {
    local name=$1 url=$2 secs=${3:-30}
    local deadline=$((SECONDS + secs)) code
    while ((SECONDS < deadline)); do
        if ! gw_alive "$name"; then
            gw_fail "$name exited before $url answered"
        fi
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" || true)
        if [[ "$code" == 200 ]]; then
            return 0
        fi
        sleep 0.1
    done
    gw_fail "$url did not answer 200 within ${secs}s (last code $code)"
}

gw_stop() {
    local name=$1 secs=${2:-30}
    local pid=${GW_PIDS[$name]:-}
    [[ -n "$pid" ]] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + secs))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        gw_log "$name did not stop within ${secs}s, killing"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    local rc=0
    wait "$pid" 2>/dev/null || rc=$?
    unset "GW_PIDS[$name]"
    return "$rc"
}

gw_wait() { # gw_wait NAME [SECS]: wait for NAME to exit by itself; its exit status (killed after SECS)
    local name=$1 secs=${2:-60}
    local pid=${GW_PIDS[$name]:-}
    [[ -n "$pid" ]] || return 0
    local deadline=$((SECONDS + secs))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        gw_log "$name still running after ${secs}s, killing"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    local rc=0
    wait "$pid" 2>/dev/null || rc=$?
    unset "GW_PIDS[$name]"
    return "$rc"
}

gw_kill9() {
    local name=$1
    local pid=${GW_PIDS[$name]:-}
    [[ -n "$pid" ]] || return 0
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset "GW_PIDS[$name]"
}

gw_start_gpuwatch() {
    local name=$1 port=$2 data=$3
    shift 3
    gw_start "$name" "$GW_TMP/$name.log" "$GW_BIN" serve --listen "127.0.0.1:$port" --data-dir "$data" "$@"
    gw_wait_http "$name" "http://127.0.0.1:$port/-/ready" "${GW_READY_SECS:-60}"
}

gw_http_code() {
    local method=$1 url=$2
    shift 2
    curl -s -o "$GW_TMP/last_body" -w '%{http_code}' -X "$method" --max-time "${GW_CURL_TIMEOUT:-10}" "$@" "$url" || true
}

# Resident set size (KiB) of a process.
gw_rss_kb() {
    awk '/^VmRSS:/ {print $2}' "/proc/$1/status"
}
