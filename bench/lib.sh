# bench/lib.sh - helpers shared by the bench/run_*.sh scripts (sourced by
# them; bash).

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# wait_http URL SECS PID: 0 once URL answers 200; 1 when PID has exited or
# SECS seconds have passed.
wait_http() {
    local deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)); do
        if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true)" == 200 ]]; then return 0; fi
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# stop_pid PID SECS: SIGTERM, up to SECS seconds to exit, then SIGKILL;
# reaps it.
stop_pid() {
    kill -TERM "$1" 2>/dev/null || true
    local deadline=$((SECONDS + $2))
    while kill -0 "$1" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# field KEY LINE: the value of KEY=value in a line of space-separated pairs.
field() {
    tr ' ' '\n' <<<"$2" | awk -F= -v k="$1" '$1 == k {print $2}'
}
