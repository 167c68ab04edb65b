#!/usr/bin/env bash
# it_events.sh - scheduler events over HTTP (POST/GET /api/v1/events).
#
# A fresh `gpuwatch serve` gets
#   1. a good body of five events (JSON lines): 200, stored 5;
#   2. bad bodies (an unknown field on line 3, a bad node name on line 2,
#      broken JSON on line 1, a duplicate key): 400 bad_data whose message
#      names the line, and nothing of them is stored;
#   3. a wrong Content-Type: 415;
# then GET answers with the filters (start/end, type, node, limit), and
# after a restart of serve on the same data dir the same events come back
# and new ones continue the seq. Finally a node the scheduler excluded an
# hour ago is on the exclusion list of /api/v1/exclusions and of
# `gpuwatch exclusions` (--url and --data-dir), and /api/v1/sessions
# shows the session the events reported.
#
# Usage: bash it_events.sh <build_dir>
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"
gw_require_bin curl
gw_require_bin python3

data="$GW_TMP/data"
port=$(gw_free_port)
gw_start_gpuwatch s1 "$port" "$data" --no-detectors
url="http://127.0.0.1:$port/api/v1/events"

post() { # post FILE [content-type] -> status; body in $GW_TMP/last_body
    gw_http_code POST "$url" -H "Content-Type: ${2:-application/x-ndjson}" --data-binary "@$1"
}

# Asserts a JSON body with python: check BODY_FILE 'python expression over d'
check() {
    python3 - "$1" "$2" <<'PY' || gw_fail "check failed: $2 on $(head -c 600 "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
if not eval("(" + sys.argv[2] + ")"):
    sys.exit(1)
PY
}

cat >"$GW_TMP/good.jsonl" <<'EOF'
{"type":"session_start","time":"2026-12-01T10:00:00Z","session":"job-1","nodes":["GPU-A1","gpu-a2"]}

{"type":"session_fail","time":"2026-12-01T11:00:00+01:00","session":"job-1","node":"gpu-a2","reason":"XID 79"}
{"type":"node_excluded","time":1796119500,"node":"gpu-a2","reason":"xid 79"}
{"type":"session_retry","time":1796119560.5,"session":"job-2","retry_of":"job-1","nodes":["gpu-a1","gpu-a3"]}
{"type":"node_returned","time":"2026-12-02T10:00:00Z","node":"gpu-a2"}
EOF
code=$(post "$GW_TMP/good.jsonl")
[[ "$code" == 200 ]] || gw_fail "good body: HTTP $code: $(cat "$GW_TMP/last_body")"
check "$GW_TMP/last_body" 'd == {"status": "success", "data": {"stored": 5}}'
gw_log "stored 5 events"

bad() { # bad NAME EXPECTED_SUBSTRING LINES...
    local name=$1 want=$2
    shift 2
    printf '%s\n' "$@" >"$GW_TMP/$name.jsonl"
    code=$(post "$GW_TMP/$name.jsonl")
    [[ "$code" == 400 ]] || gw_fail "$name: HTTP $code, want 400: $(cat "$GW_TMP/last_body")"
    check "$GW_TMP/last_body" 'd["status"] == "error" and d["errorType"] == "bad_data"'
    grep -qF -- "$want" "$GW_TMP/last_body" || gw_fail "$name: message does not say '$want': $(cat "$GW_TMP/last_body")"
    gw_log "$name: 400 $(cat "$GW_TMP/last_body")"
}
ok_line='{"type":"node_excluded","time":1796200000,"node":"bad-1"}'
bad unknown_field 'line 3: unknown field \"color\"' "$ok_line" "$ok_line" \
    '{"type":"node_returned","time":1796200000,"node":"bad-1","color":"red"}'
bad bad_node 'line 2: \"nodes\": \"gpu a1\" is not a host name' "$ok_line" \
    '{"type":"session_start","time":1796200000,"session":"bad","nodes":["gpu a1"]}'
bad broken_json 'line 1: invalid JSON' '{"type":"node_excluded","time":1796200000,' "$ok_line"
bad duplicate_key 'line 2: invalid JSON' "$ok_line" \
    '{"type":"node_excluded","time":1796200000,"node":"bad-1","node":"bad-2"}'
bad unknown_type 'line 1: unknown type \"session_pause\"' '{"type":"session_pause","time":1796200000,"session":"x"}'

code=$(post "$GW_TMP/good.jsonl" application/x-www-form-urlencoded)
[[ "$code" == 415 ]] || gw_fail "form content type: HTTP $code, want 415"

# nothing of the bad bodies was stored
code=$(gw_http_code GET "$url?node=bad-1")
[[ "$code" == 200 ]] || gw_fail "GET node=bad-1: HTTP $code"
check "$GW_TMP/last_body" 'd == {"status": "success", "data": []}'

get_check() { # get_check QUERY EXPRESSION
    code=$(gw_http_code GET "$url?$1")
    [[ "$code" == 200 ]] || gw_fail "GET ?$1: HTTP $code: $(cat "$GW_TMP/last_body")"
    check "$GW_TMP/last_body" "$2"
}
all_ok='d["status"] == "success" and [e["seq"] for e in d["data"]] == [1, 2, 3, 4, 5]
    and [e["type"] for e in d["data"]] == ["session_start", "session_fail", "node_excluded", "session_retry",
                                          "node_returned"]
    and d["data"][0]["nodes"] == ["gpu-a1", "gpu-a2"] and d["data"][0]["time"] == "2026-12-01T10:00:00Z"
    and d["data"][1]["time"] == "2026-12-01T10:00:00Z" and d["data"][3]["time"] == "2026-12-01T10:06:00.5Z"'
get_check "" "$all_ok"
get_check "start=2026-12-01T10:05:00Z&end=1796126400" '[e["seq"] for e in d["data"]] == [3, 4]'
get_check "type=session_start" '[e["seq"] for e in d["data"]] == [1]'
get_check "node=GPU-A3" '[e["seq"] for e in d["data"]] == [4]'
get_check "node=gpu-a2" '[e["seq"] for e in d["data"]] == [1, 2, 3, 5]'
get_check "node=gpu-a2&type=node_excluded" '[e["seq"] for e in d["data"]] == [3]'
get_check "limit=2" '[e["seq"] for e in d["data"]] == [1, 2]'
get_check "node=gpu-a2&limit=3" '[e["seq"] for e in d["data"]] == [1, 2, 3]'
code=$(gw_http_code GET "$url?type=nope")
[[ "$code" == 400 ]] || gw_fail "GET type=nope: HTTP $code"
code=$(gw_http_code GET "$url?start=yesterday")
[[ "$code" == 400 ]] || gw_fail "GET start=yesterday: HTTP $code"
gw_log "GET filters ok"

# what GET gives back can be posted again (seq is accepted and replaced)
code=$(gw_http_code GET "$url?limit=1")
python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["data"][0]))' "$GW_TMP/last_body" \
    >"$GW_TMP/again.jsonl"
code=$(post "$GW_TMP/again.jsonl")
[[ "$code" == 200 ]] || gw_fail "re-posting a GET answer: HTTP $code: $(cat "$GW_TMP/last_body")"

gw_stop s1 || gw_fail "serve exited with an error"
gw_log "restarting serve on the same data dir"
port=$(gw_free_port)
gw_start_gpuwatch s2 "$port" "$data" --no-detectors
url="http://127.0.0.1:$port/api/v1/events"
get_check "" '[e["seq"] for e in d["data"]] == [1, 2, 6, 3, 4, 5] and d["data"][2]["nodes"] == ["gpu-a1", "gpu-a2"]'
printf '%s\n' '{"type":"session_end","time":"2026-12-03T00:00:00Z","session":"job-2","outcome":"completed"}' \
    >"$GW_TMP/more.jsonl"
code=$(post "$GW_TMP/more.jsonl" "application/json; charset=utf-8")
[[ "$code" == 200 ]] || gw_fail "post after restart: HTTP $code: $(cat "$GW_TMP/last_body")"
get_check "type=session_end" '[(e["seq"], e["outcome"]) for e in d["data"]] == [(7, "completed")]'

# The ledger over the events: a node the scheduler excluded an hour ago is
# on the exclusion list (API and `gpuwatch exclusions`, from the server and
# from the data dir), and sessions answer.
now=$(date +%s)
printf '%s\n' \
    "{\"type\":\"session_start\",\"time\":$((now - 7200)),\"session\":\"job-9\",\"nodes\":[\"gpu-b1\",\"gpu-b2\"]}" \
    "{\"type\":\"node_excluded\",\"time\":$((now - 3600)),\"node\":\"GPU-B1\",\"reason\":\"bad HBM\"}" \
    >"$GW_TMP/recent.jsonl"
code=$(post "$GW_TMP/recent.jsonl")
[[ "$code" == 200 ]] || gw_fail "recent events: HTTP $code: $(cat "$GW_TMP/last_body")"
base="http://127.0.0.1:$port"
code=$(gw_http_code GET "$base/api/v1/exclusions")
[[ "$code" == 200 ]] || gw_fail "GET exclusions: HTTP $code: $(cat "$GW_TMP/last_body")"
check "$GW_TMP/last_body" 'd["status"] == "success" and "gpu-b1" in d["data"]["hosts"] and "gpu-b2" not in d["data"]["hosts"]'
code=$(gw_http_code GET "$base/api/v1/exclusions?format=hosts")
[[ "$code" == 200 ]] || gw_fail "GET exclusions hosts: HTTP $code"
grep -qx gpu-b1 "$GW_TMP/last_body" || gw_fail "exclusions?format=hosts lacks gpu-b1: $(cat "$GW_TMP/last_body")"
code=$(gw_http_code GET "$base/api/v1/exclusions?format=yaml")
[[ "$code" == 400 ]] || gw_fail "GET exclusions format=yaml: HTTP $code, want 400"
"$GW_BIN" exclusions --url "$base" >"$GW_TMP/cli_hosts" || gw_fail "gpuwatch exclusions --url failed"
grep -qx gpu-b1 "$GW_TMP/cli_hosts" || gw_fail "gpuwatch exclusions --url lacks gpu-b1: $(cat "$GW_TMP/cli_hosts")"
"$GW_BIN" exclusions --url "$base" --format slurm >"$GW_TMP/cli_slurm" || gw_fail "exclusions --format slurm failed"
tr ',' '\n' <"$GW_TMP/cli_slurm" | grep -qx gpu-b1 || gw_fail "slurm list lacks gpu-b1: $(cat "$GW_TMP/cli_slurm")"
"$GW_BIN" exclusions --url "$base" --format json >"$GW_TMP/cli_json" || gw_fail "exclusions --format json failed"
check "$GW_TMP/cli_json" '"gpu-b1" in d["data"]["hosts"]'
"$GW_BIN" exclusions --data-dir "$data" >"$GW_TMP/cli_dir" || gw_fail "gpuwatch exclusions --data-dir failed"
grep -qx gpu-b1 "$GW_TMP/cli_dir" || gw_fail "gpuwatch exclusions --data-dir lacks gpu-b1: $(cat "$GW_TMP/cli_dir")"
rc=0
"$GW_BIN" exclusions --url "$base" --data-dir "$data" 2>/dev/null || rc=$?
[[ "$rc" == 2 ]] || gw_fail "exclusions with both --url and --data-dir: exit $rc, want 2"
code=$(gw_http_code GET "$base/api/v1/sessions")
[[ "$code" == 200 ]] || gw_fail "GET sessions: HTTP $code: $(cat "$GW_TMP/last_body")"
check "$GW_TMP/last_body" 'd["status"] == "success" and [s["nodes"] for s in d["data"]["sessions"]
    if s["scheduler_id"] == "job-9"] == [["gpu-b1", "gpu-b2"]]'
gw_log "exclusions and sessions ok"

gw_stop s2 || gw_fail "serve exited with an error"
gw_log "ok"
