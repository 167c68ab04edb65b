#!/usr/bin/env bash
# it_badinput.sh - the remote-write endpoint refuses bad input with the
# right status and keeps serving.
#
# Against one gpuwatch serve: garbage body, truncated snappy, a snappy
# header declaring 1 GiB (400 fast, no RSS jump), snappy of broken
# protobuf (400); series with duplicate / empty / invalid label names or
# no __name__ next to a valid series (400 naming the refusal, the valid
# series stored and queryable); body > 32 MiB (413); Content-Type
# application/json and Content-Encoding gzip (415); GET (405). Then
# /-/ready is still 200 and a valid write works, also while 20 stalled
# clients hold connections open (write and query must answer within 2 s),
# while 20 clients upload a body a byte every 0.5 s (slow loris), and while
# 20 clients never read a large answer (11,000 points) they asked for.
#
# Usage: bash it_badinput.sh <build_dir>
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build

port=$(gw_free_port)
base="http://127.0.0.1:$port"
gw_start_gpuwatch gw "$port" "$GW_TMP/data"
pid=$(gw_pid gw)

now_ms=$(($(date +%s) * 1000))
rw_hdr=(-H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: snappy'
        -H 'X-Prometheus-Remote-Write-Version: 0.1.0')

post() { # post FILE [extra curl args...] -> status code; body in $GW_TMP/last_body
    local f=$1
    shift
    gw_http_code POST "$base/api/v1/write" "${rw_hdr[@]}" --data-binary "@$f" "$@"
}

expect() { # expect WHAT WANT GOT
    if [[ "$3" != "$2" ]]; then
        gw_fail "$1: expected HTTP $2, got $3: $(head -c 300 "$GW_TMP/last_body" 2>/dev/null)"
    fi
    gw_log "ok: $1 -> $3 $(head -c 120 "$GW_TMP/last_body" 2>/dev/null | tr '\n' ' ')"
}

query_value() { # query_value PROMQL TIME_S -> prints the value of the single result or "none"
    curl -s --max-time 5 "$base/api/v1/query" --data-urlencode "query=$1" --data-urlencode "time=$2" |
        python3 -c 'import json,sys
d = json.load(sys.stdin)
r = d.get("data", {}).get("result", []) if d.get("status") == "success" else []
print(r[0]["value"][1] if len(r) == 1 else "none")'
}

ok_body() { # ok_body NAME CASE -> a snappy body with one valid series
    "$GW_LOAD" body --snappy --ts "$now_ms" --value 1 --out "$GW_TMP/$1" \
        --series "__name__=badinput_ok,case=$2,job=it"
}

# 1. garbage
printf 'this is not snappy at all \x01\x02\x03' >"$GW_TMP/garbage"
expect "garbage body" 400 "$(post "$GW_TMP/garbage")"

# 2. truncated snappy
"$GW_LOAD" body --ts "$now_ms" --out "$GW_TMP/big.pb" \
    --series "__name__=badinput_trunc,job=it,pad=$(printf 'x%.0s' {1..300})" \
    --series "__name__=badinput_trunc,job=it,pad=$(printf 'y%.0s' {1..300})"
"$GW_LOAD" snappy --in "$GW_TMP/big.pb" --out "$GW_TMP/big.sn"
head -c "$(($(stat -c %s "$GW_TMP/big.sn") / 2))" "$GW_TMP/big.sn" >"$GW_TMP/trunc.sn"
expect "truncated snappy" 400 "$(post "$GW_TMP/trunc.sn")"

# 3. snappy header claiming 1 GiB (uvarint 2^30 = 80 80 80 80 04)
rss0=$(gw_rss_kb "$pid")
printf '\x80\x80\x80\x80\x04\x00abc' >"$GW_TMP/huge.sn"
t0=$(date +%s%N)
expect "snappy header declaring 1 GiB" 400 "$(post "$GW_TMP/huge.sn")"
t1=$(date +%s%N)
rss1=$(gw_rss_kb "$pid")
(((t1 - t0) / 1000000 < 1000)) || gw_fail "1 GiB snappy claim took $(((t1 - t0) / 1000000)) ms to refuse"
((rss1 - rss0 < 65536)) || gw_fail "RSS grew from ${rss0} KiB to ${rss1} KiB on a 1 GiB snappy claim"
gw_log "ok: refused in $(((t1 - t0) / 1000000)) ms, RSS ${rss0} -> ${rss1} KiB"

# 4. valid snappy, broken protobuf (field 1 length-delimited, length runs past the end)
printf '\x0a\xff\xff\x03\x0a\x02ab' >"$GW_TMP/broken.pb"
"$GW_LOAD" snappy --in "$GW_TMP/broken.pb" --out "$GW_TMP/broken.sn"
expect "snappy of broken protobuf" 400 "$(post "$GW_TMP/broken.sn")"
printf '\x0f\x0f\x0f\x0f' >"$GW_TMP/badwire.pb"
"$GW_LOAD" snappy --in "$GW_TMP/badwire.pb" --out "$GW_TMP/badwire.sn"
expect "snappy of protobuf with invalid wire type" 400 "$(post "$GW_TMP/badwire.sn")"

# 5. invalid label sets next to a valid series
declare -A bad=(
    [dup]="__name__=badinput_bad,job=it,a=1,a=2"
    [emptyname]="__name__=badinput_bad,job=it,=x"
    [badname]="__name__=badinput_bad,job=it,1abc=x"
    [dashname]="__name__=badinput_bad,job=it,a-b=x"
    [noname]="job=it,a=1"
    [badmetric]="__name__=bad-metric,job=it"
)
for c in dup emptyname badname dashname noname badmetric; do
    "$GW_LOAD" body --snappy --ts "$now_ms" --value 1 --out "$GW_TMP/mixed_$c" \
        --series "__name__=badinput_ok,case=$c,job=it" --series "${bad[$c]}"
    code=$(post "$GW_TMP/mixed_$c")
    expect "valid series + invalid labels ($c)" 400 "$code"
    [[ -s "$GW_TMP/last_body" ]] || gw_fail "400 for $c has no message"
    v=$(query_value "badinput_ok{case=\"$c\"}" "$((now_ms / 1000 + 1))")
    [[ "$v" == 1 ]] || gw_fail "valid series sent next to invalid labels ($c) not stored: query gave $v"
done
v2=$(curl -s "$base/api/v1/series" --data-urlencode 'match[]=badinput_bad' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
[[ "$v2" == 0 ]] || gw_fail "an invalid series was stored ($v2 series named badinput_bad)"
gw_log "ok: invalid series not stored"

# 6. body > 32 MiB
head -c $((33 * 1024 * 1024)) /dev/zero >"$GW_TMP/33m"
expect "33 MiB body" 413 "$(post "$GW_TMP/33m")"

# 7. / 8. wrong content type / encoding
ok_body ok7.sn ctype
expect "Content-Type application/json" 415 \
    "$(gw_http_code POST "$base/api/v1/write" -H 'Content-Type: application/json' -H 'Content-Encoding: snappy' --data-binary "@$GW_TMP/ok7.sn")"
expect "Content-Encoding gzip" 415 \
    "$(gw_http_code POST "$base/api/v1/write" -H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: gzip' --data-binary "@$GW_TMP/ok7.sn")"

# 9. wrong method
expect "GET /api/v1/write" 405 "$(gw_http_code GET "$base/api/v1/write")"

# 10. still alive, valid write works
expect "/-/ready after bad input" 200 "$(gw_http_code GET "$base/-/ready")"
ok_body ok10.sn after
expect "valid write after bad input" 204 "$(post "$GW_TMP/ok10.sn")"
v=$(query_value 'badinput_ok{case="after"}' "$((now_ms / 1000 + 1))")
[[ "$v" == 1 ]] || gw_fail "valid write after bad input not queryable: $v"

# 11. clients that stall mid-request, upload a body a byte every 0.5 s (slow
# loris) or never read a large answer (11,000 points) must not block others
big="/api/v1/query_range?query=vector(time())&start=$((now_ms / 1000 - 11000))&end=$((now_ms / 1000 - 1))&step=1"
for mode in stall drip noread; do
    rm -f "$GW_TMP/slow.ready"
    gw_start slow "$GW_TMP/slow_$mode.log" python3 "$GW_IT_DIR/slow_clients.py" --port "$port" --n 20 --hold 6 \
        --ready "$GW_TMP/slow.ready" --mode "$mode" --path "$big"
    for _ in $(seq 100); do [[ -f "$GW_TMP/slow.ready" ]] && break; sleep 0.1; done
    [[ -f "$GW_TMP/slow.ready" ]] || gw_fail "slow clients ($mode) did not connect"
    ok_body "ok11$mode.sn" "slow_$mode"
    code=$(GW_CURL_TIMEOUT=2 post "$GW_TMP/ok11$mode.sn")
    expect "write while 20 clients $mode" 204 "$code"
    code=$(GW_CURL_TIMEOUT=2 gw_http_code GET "$base/api/v1/query?query=badinput_ok&time=$((now_ms / 1000 + 1))")
    expect "query while 20 clients $mode" 200 "$code"
    code=$(GW_CURL_TIMEOUT=2 gw_http_code GET "$base$big")
    expect "large query while 20 clients $mode" 200 "$code"
    gw_wait slow 30 || gw_fail "slow client helper ($mode) failed"
    cat "$GW_TMP/slow_$mode.log" >&2
done
expect "/-/ready after slow clients" 200 "$(gw_http_code GET "$base/-/ready")"

gw_stop gw 60 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS"
