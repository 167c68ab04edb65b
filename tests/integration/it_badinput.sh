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
# Limits (docs/limits.md): a Content-Length over the body limit is 413
# within 1 s with only the headers sent (with and without Expect:
# 100-continue); a series over --limits.series.max-labels is named in a
# 400 and its valid neighbour stored; bodies held past
# --limits.http.max-inflight-body-bytes get 503 + Retry-After at once and
# writes recover when they go; a second server with one write slot and
# slow writes answers 503 + Retry-After to the excess and recovers.
#
# Usage: bash it_badinput.sh <build_dir>
source "$(dirname "$0")/lib.sh" "$@"
gw_require_build

port=$(gw_free_port)
base="http://127.0.0.1:$port"
gw_start_gpuwatch gw "$port" "$GW_TMP/data" \
    --limits.series.max-labels 20 --limits.http.max-inflight-body-bytes 4194304
pid=$(gw_pid gw)
# the second server of step 15 (one write slot, writes held by the test
# knob) starts meanwhile
port2=$(gw_free_port)
GW_DEBUG_HANDLER_DELAY_MS=800 gw_start gw2 "$GW_TMP/gw2.log" "$GW_BIN" serve --listen "127.0.0.1:$port2" \
    --data-dir "$GW_TMP/data2" --limits.http.max-concurrent-writes 1 --limits.http.queue-wait 100ms

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

# 12. declared size over the limit: 413 at once, only the headers sent
# (a raw connection: the status line must come within 1 s)
for exp in "" "Expect: 100-continue"; do
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    t0=$(date +%s%N)
    printf 'POST /api/v1/write HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n%sContent-Length: 104857600\r\n\r\n' \
        "${exp:+$exp$'\r\n'}" >&3
    line=none
    IFS= read -r -t 1 line <&3 || true
    t1=$(date +%s%N)
    exec 3<&-
    [[ "$line" == "HTTP/1.1 413"* ]] || gw_fail "declared 100 MiB ${exp:+($exp) }answered \"$line\", not 413 within 1 s"
    gw_log "ok: declared 100 MiB ${exp:+($exp) }-> ${line%$'\r'} in $(((t1 - t0) / 1000000)) ms"
done

# 13. a series over --limits.series.max-labels next to a valid series
many="__name__=badinput_many,job=it"
for i in $(seq 1 25); do many+=",l$i=v"; done
"$GW_LOAD" body --snappy --ts "$now_ms" --value 1 --out "$GW_TMP/many.sn" \
    --series "__name__=badinput_ok,case=labels,job=it" --series "$many"
expect "series with 27 labels, limit 20" 400 "$(post "$GW_TMP/many.sn")"
grep -q 'series "badinput_many" has 27 labels, limit 20 (--limits.series.max-labels)' "$GW_TMP/last_body" ||
    gw_fail "the 400 does not name the series and the limit: $(cat "$GW_TMP/last_body")"
curl -s --max-time 5 "$base/api/v1/query" --data-urlencode 'query=badinput_ok{case="labels"}' \
    --data-urlencode "time=$((now_ms / 1000 + 1))" >"$GW_TMP/labels.json"
grep -q '"case":"labels".*"value":\[[0-9.]*,"1"\]' "$GW_TMP/labels.json" ||
    gw_fail "valid series next to one over the label limit not stored: $(cat "$GW_TMP/labels.json")"

# 14. bodies held in memory past the in-flight budget (4 MiB): a raw
# connection sends 3 MiB of a 3.5 MiB upload and stalls; a second 3 MiB
# declaration gets 503 + Retry-After at once, small writes still go
# through; once the holder leaves, the big one is read again (400: not
# snappy)
exec 4<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /api/v1/write HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 3670016\r\n\r\n' >&4
head -c $((3 * 1024 * 1024)) /dev/zero >"$GW_TMP/3m"
cat "$GW_TMP/3m" >&4
sleep 0.5
t0=$(date +%s%N)
code=$(gw_http_code POST "$base/api/v1/write" "${rw_hdr[@]}" --data-binary "@$GW_TMP/3m" -D "$GW_TMP/hdrs")
t1=$(date +%s%N)
expect "3 MiB body while 3 MiB are held (budget 4 MiB)" 503 "$code"
grep -qi '^Retry-After: 1' "$GW_TMP/hdrs" || gw_fail "503 without Retry-After: $(cat "$GW_TMP/hdrs")"
(((t1 - t0) / 1000000 < 1000)) || gw_fail "over-budget body took $(((t1 - t0) / 1000000)) ms to refuse"
ok_body ok14.sn budget
expect "small write while 3 MiB are held" 204 "$(post "$GW_TMP/ok14.sn")"
exec 4>&-
sleep 0.3
expect "3 MiB body once the holder left" 400 "$(post "$GW_TMP/3m")"
gw_log "ok: budget refusal in $(((t1 - t0) / 1000000)) ms"

gw_stop gw 60 || gw_fail "gpuwatch exited non-zero on SIGTERM"

# 15. one write slot, writes held 0.8 s each (test knob), queue wait 100 ms:
# three writes coming while a first one holds the slot get 503 +
# Retry-After; when it is done, a write is stored again
base="http://127.0.0.1:$port2"
gw_wait_http gw2 "$base/-/ready" "${GW_READY_SECS:-60}"
ok_body par.sn par
par_pids=()
for i in 1 2 3 4; do
    curl -s -o "$GW_TMP/par$i.body" -D "$GW_TMP/par$i.hdrs" -w '%{http_code}' --max-time 10 -X POST \
        "${rw_hdr[@]}" --data-binary "@$GW_TMP/par.sn" "$base/api/v1/write" >"$GW_TMP/par$i.code" &
    par_pids+=($!)
    # the first holds the slot (and its worker thread) when the others come
    if [[ $i == 1 ]]; then sleep 0.3; fi
done
wait "${par_pids[@]}"
n204=0 n503=0
for i in 1 2 3 4; do
    c=$(cat "$GW_TMP/par$i.code")
    if [[ "$c" == 204 ]]; then n204=$((n204 + 1)); fi
    if [[ "$c" == 503 ]]; then
        n503=$((n503 + 1))
        grep -qi '^Retry-After: 1' "$GW_TMP/par$i.hdrs" || gw_fail "503 without Retry-After"
        grep -q 'limits.http.max-concurrent-writes' "$GW_TMP/par$i.body" || gw_fail "503 does not name the limit"
    fi
done
((n204 >= 1 && n503 >= 1 && n204 + n503 == 4)) || gw_fail "4 writes on one slot: $n204 x 204, $n503 x 503"
gw_log "ok: one write slot: $n204 x 204, $n503 x 503 + Retry-After"
expect "write after the overload" 204 "$(post "$GW_TMP/par.sn")"
gw_stop gw2 60 || gw_fail "second gpuwatch exited non-zero on SIGTERM"
gw_log "PASS"
