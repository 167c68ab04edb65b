#!/usr/bin/env bash
# it_tls_auth.sh - authentication and TLS with a real Prometheus 2.42. A
# throwaway CA (openssl) signs gpuwatch's certificates; gpuwatch serves
# https with separate write, read and admin credentials:
#   write: bearer token file (wtok) and basic file (writer:wpass)
#   read:  bearer token file (rtok) and basic file (reader:rpass, hashed)
#   admin: basic file (admin:apass, hashed)
#   Prometheus A scrapes itself (job pa), remote_write + remote_read with
#     `authorization` (bearer credentials_file) and tls_config.ca_file;
#   Prometheus B scrapes itself (job pb), remote_write + remote_read with
#     `basic_auth`;
#   Prometheus C (job pc) remote-writes without credentials and with a
#     wrong password.
# Checks:
#   1. A answers up{job="pb"} and B answers up{job="pa"}: each wrote its own
#      samples and reads the other's back through remote read, each with its
#      own kind of credentials, over https;
#   2. C's writes get 401 (its log) and nothing of job pc is stored; curl
#      without credentials, with a wrong password, or with write
#      credentials on a read endpoint gets 401 with WWW-Authenticate;
#      /-/healthy stays open;
#   3. admin endpoints refuse read credentials and no credentials (401, even
#      from loopback) and answer admin credentials;
#   4. a new certificate (cert and key files replaced) is served after
#      POST /-/reload, by the same process (same PID), and A keeps writing;
#   5. a second gpuwatch (plain, fed 1 simulated hour with failures: seed
#      2, failure scale 100) sends its alerts to a real Alertmanager over
#      https with basic auth (Alertmanager's --web.config.file:
#      tls_server_config and a bcrypt user) while 4 runs: Alertmanager
#      holds its GpuXidError alerts;
#   6. the second gpuwatch forwards everything it accepted to the first over
#      https with the write token (--forward.tls.ca-file,
#      --forward.bearer-token-file): the same DCGM samples in both.
#
# Usage: bash it_tls_auth.sh <build_dir>
# Needs prometheus, prometheus-alertmanager and openssl (GW_ALLOW_SKIP=1 to skip).
source "$(dirname "$0")/lib.sh" "$@"
[[ -x "$GW_BIN" ]] || gw_fail "$GW_BIN not built"
gw_require_bin prometheus
gw_require_bin openssl
AM_BIN=${GW_AM_BIN:-/usr/bin/prometheus-alertmanager}
gw_require_bin "$AM_BIN"

T=$GW_TMP
# six distinct free ports from one python3 (each start costs on a loaded machine)
read -r gw_port gw2_port am_port pa_port pb_port pc_port < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(6)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
gw="https://127.0.0.1:$gw_port"
am="https://127.0.0.1:$am_port"

# --- certificates: CA, gpuwatch (two, for the reload), Alertmanager
cd "$T"
gw_log "making a CA and certificates"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 1 -subj /CN=gw-it-ca >/dev/null 2>&1 \
    || gw_fail "openssl cannot make a CA"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
for n in srv1 srv2 am; do
    openssl req "${ec[@]}" -keyout $n.key -out $n.csr -subj "/CN=$n" >/dev/null 2>&1
    openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $n.pem -days 1 \
        -extfile san.ext >/dev/null 2>&1 || gw_fail "openssl cannot sign $n"
done
cp srv1.pem server.pem
cp srv1.key server.key
export CURL_CA_BUNDLE=$T/ca.pem   # every curl below trusts the test CA

sha() { printf '%s' "$1" | sha256sum | cut -c1-64; }
echo wtok >write.tok
echo 'writer:wpass' >write.basic
echo rtok >read.tok
echo "reader:sha256:$(sha rpass)" >read.basic
echo "admin:sha256:$(sha apass)" >admin.basic
echo wpass >wpass.txt
echo rpass >rpass.txt
echo ampass >ampass.txt


# wait_code NAME URL CODE [curl args]: poll until URL answers CODE
wait_code() {
    local name=$1 url=$2 want=$3 code=
    shift 3
    for _ in $(seq 1 300); do
        gw_alive "$name" || gw_fail "$name exited before $url answered"
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url" || true)
        [[ "$code" == "$want" ]] && return 0
        sleep 0.1
    done
    gw_fail "$url did not answer $want within 30s (last $code)"
}
# --- Alertmanager over https with a bcrypt user, and a plain gpuwatch alerting it
am_hash=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("ampass", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))')
[[ "$am_hash" == '$2'* ]] || gw_fail "cannot make a bcrypt hash for Alertmanager ($am_hash)"
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  gw: %s\n' \
    "$T/am.pem" "$T/am.key" "'$am_hash'" >am-web.yml
printf 'route:\n  receiver: none\nreceivers:\n  - name: none\n' >am.yml
gw_start am "$T/am.log" "$AM_BIN" --config.file="$T/am.yml" --storage.path="$T/amdata" \
    --web.listen-address="127.0.0.1:$am_port" --web.config.file="$T/am-web.yml" --cluster.listen-address=
gw_start gw2 "$T/gw2.log" "$GW_BIN" serve --listen "127.0.0.1:$gw2_port" --data-dir "$T/gw2data" \
    --alertmanager.url "$am" --alertmanager.tls.ca-file ca.pem \
    --alertmanager.basic-auth.username gw --alertmanager.basic-auth.password-file ampass.txt \
    --forward "$gw/api/v1/write" --forward.tls.ca-file ca.pem --forward.bearer-token-file write.tok

# --- gpuwatch over https
gw_start gw "$T/gw.log" "$GW_BIN" serve --listen "127.0.0.1:$gw_port" --data-dir "$T/gwdata" \
    --web.tls.cert-file server.pem --web.tls.key-file server.key \
    --web.auth.write.bearer-token-file write.tok --web.auth.write.basic-auth-file write.basic \
    --web.auth.read.bearer-token-file read.tok --web.auth.read.basic-auth-file read.basic \
    --web.auth.admin.basic-auth-file admin.basic
wait_code gw "$gw/-/ready" 200
gw_log "gpuwatch ready on $gw"
gw_pid0=$(gw_pid gw)

# --- three Prometheus
prom_yml() { # name job port remote_write_auth [remote_read_auth]
    cat <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: $2
    static_configs:
      - targets: ['127.0.0.1:$3']
remote_write:
  - url: $gw/api/v1/write
    tls_config:
      ca_file: $T/ca.pem
$(printf '%s\n' "$4" | sed 's/^/    /')
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 30ms
      max_backoff: 1s
EOF
    if [[ -n "${5:-}" ]]; then
        cat <<EOF
remote_read:
  - url: $gw/api/v1/read
    read_recent: true
    tls_config:
      ca_file: $T/ca.pem
$(printf '%s\n' "$5" | sed 's/^/    /')
EOF
    fi
}
prom_yml pa pa "$pa_port" $'authorization:\n  type: Bearer\n  credentials_file: '"$T/write.tok" \
    $'authorization:\n  credentials_file: '"$T/read.tok" >pa.yml
prom_yml pb pb "$pb_port" $'basic_auth:\n  username: writer\n  password_file: '"$T/wpass.txt" \
    $'basic_auth:\n  username: reader\n  password_file: '"$T/rpass.txt" >pb.yml
prom_yml pc pc "$pc_port" "" "" >pc.yml
cat >>pc.yml <<EOF
  - url: $gw/api/v1/write
    tls_config:
      ca_file: $T/ca.pem
    basic_auth:
      username: writer
      password: wrong
    queue_config:
      batch_send_deadline: 1s
EOF
for p in pa pb pc; do
    port_var=${p}_port
    gw_start "$p" "$T/$p.log" prometheus --config.file="$T/$p.yml" --storage.tsdb.path="$T/$p" \
        --web.listen-address="127.0.0.1:${!port_var}"
done
for p in pa pb pc; do
    port_var=${p}_port
    wait_code "$p" "http://127.0.0.1:${!port_var}/-/ready" 200
done
gw_log "Prometheus A, B and C ready"
wait_code am "$am/-/ready" 200 -u gw:ampass
[[ $(curl -s -o /dev/null -w '%{http_code}' -u gw:wrong "$am/api/v2/alerts") == 401 ]] ||
    gw_fail "Alertmanager accepts a wrong password: the check below would prove nothing"
wait_code gw2 "http://127.0.0.1:$gw2_port/-/ready" 200
gw_log "Alertmanager (https, basic auth) and the second gpuwatch ready"

# count_of URL QUERY [curl args]: number of series in a query's answer
count_of() {
    local url=$1 q=$2
    shift 2
    curl -sS --max-time 10 "$@" --data-urlencode "query=$q" "$url/api/v1/query" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["data"]["result"]) if d.get("status")=="success" else -1)'
}
# 1. each Prometheus reads back what the other wrote, through gpuwatch
ok=0
for _ in $(seq 1 40); do
    a=$(count_of "http://127.0.0.1:$pa_port" 'up{job="pb"}')
    b=$(count_of "http://127.0.0.1:$pb_port" 'up{job="pa"}')
    [[ "$a" == 1 && "$b" == 1 ]] && { ok=1; break; }
    sleep 0.5
done
((ok)) || gw_fail "remote read through gpuwatch: A sees $a series of job pb, B sees $b of job pa (want 1 each)"
gw_log "OK 1: A (bearer) and B (basic) wrote over https and read each other's samples back"

# 2. no credentials, wrong ones: 401, nothing stored
for _ in $(seq 1 20); do grep -q '401' pc.log && break; sleep 0.5; done
grep -q '401' pc.log || gw_fail "Prometheus C's log shows no 401: $(tail -5 pc.log)"
n=$(count_of "$gw" '{job="pc"}' -u reader:rpass)
[[ "$n" == 0 ]] || gw_fail "gpuwatch stored $n series of job pc, written without valid credentials"
n=$(count_of "$gw" '{job="pa"}' -H 'Authorization: Bearer rtok')
((n > 0)) || gw_fail "the read token sees no series of job pa ($n)"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
[[ $(code "$gw/api/v1/query?query=up") == 401 ]] || gw_fail "a query without credentials is not 401"
[[ $(code -u reader:wrong "$gw/api/v1/query?query=up") == 401 ]] || gw_fail "a wrong password is not 401"
[[ $(code -H 'Authorization: Bearer wtok' "$gw/api/v1/query?query=up") == 401 ]] ||
    gw_fail "the write token reads"
[[ $(code "$gw/metrics") == 401 ]] || gw_fail "/metrics is open"
[[ $(code "$gw/-/healthy") == 200 ]] || gw_fail "/-/healthy is not open"
curl -s -D hdr.txt -o body.txt -X POST --data-binary 'x' "$gw/api/v1/write" || true
grep -qi '^WWW-Authenticate: Bearer realm="gpuwatch write"' hdr.txt || gw_fail "no WWW-Authenticate on a 401: $(cat hdr.txt)"
grep -q 'write endpoints need a bearer token or basic credentials' body.txt || gw_fail "401 body: $(cat body.txt)"
gw_log "OK 2: no, wrong or other-class credentials get 401 with WWW-Authenticate; nothing of job pc stored"

# 3. admin endpoints
[[ $(code -X POST "$gw/api/v1/admin/flush") == 401 ]] || gw_fail "admin flush without credentials is not 401"
[[ $(code -X POST -u reader:rpass "$gw/api/v1/admin/flush") == 401 ]] || gw_fail "read credentials flush"
[[ $(code -X POST -u reader:rpass "$gw/-/reload") == 401 ]] || gw_fail "read credentials reload"
[[ $(code -X POST -u admin:apass "$gw/api/v1/admin/flush") == 200 ]] || gw_fail "admin credentials cannot flush"
gw_log "OK 3: admin endpoints need the admin credentials"

# gw2's failures, for 5 (simulated in the background of 4)
sim_start=$(( ($(date +%s) - 3600 - 60) * 1000 ))
gw_start sim "$T/sim.log" "$GW_BIN" simulate --profile smoke --seed 2 --failure-scale 100 --start "$sim_start" \
    --duration 1h --url "http://127.0.0.1:$gw2_port/api/v1/write"

# 4. certificate reload without a restart
serial() { openssl s_client -connect "127.0.0.1:$gw_port" -CAfile ca.pem </dev/null 2>/dev/null | openssl x509 -noout -serial; }
s1=$(serial)
want=$(openssl x509 -in srv2.pem -noout -serial)
[[ -n "$s1" && "$s1" != "$want" ]] || gw_fail "served serial before the reload: '$s1'"
cp srv2.key server.key.new && cp srv2.pem server.pem.new && mv server.key.new server.key && mv server.pem.new server.pem
[[ $(code -X POST -u admin:apass "$gw/-/reload") == 200 ]] || gw_fail "reload refused: $(curl -s -X POST -u admin:apass "$gw/-/reload")"
s2=$(serial)
[[ "$s2" == "$want" ]] || gw_fail "after the reload gpuwatch serves $s2, want $want"
[[ $(gw_pid gw) == "$gw_pid0" ]] && gw_alive gw || gw_fail "gpuwatch restarted"
c1=$(curl -s -u reader:rpass --data-urlencode 'query=count_over_time(up{job="pa"}[1h])' "$gw/api/v1/query" |
     python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')
for _ in $(seq 1 20); do
    sleep 0.5
    c2=$(curl -s -u reader:rpass --data-urlencode 'query=count_over_time(up{job="pa"}[1h])' "$gw/api/v1/query" |
         python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')
    ((c2 > c1)) && break
done
((c2 > c1)) || gw_fail "A stopped writing after the certificate reload ($c1 -> $c2 samples)"
gw_log "OK 4: new certificate ($s1 -> $s2) served by the same process; A kept writing ($c1 -> $c2)"

# 5. gw2's alerts at Alertmanager, over https with basic auth
gw_wait sim 60 || gw_fail "simulate failed: $(tail -3 sim.log)"
ok=0
for _ in $(seq 1 40); do
    n=$(curl -s -u gw:ampass "$am/api/v2/alerts" |
        python3 -c 'import json,sys; print(sum(1 for x in json.load(sys.stdin) if x["labels"].get("alertname") == "GpuXidError"))')
    ((n > 0)) && { ok=1; break; }
    sleep 0.5
done
((ok)) || gw_fail "Alertmanager holds no GpuXidError; gpuwatch has $(curl -s "http://127.0.0.1:$gw2_port/api/v1/alerts" | head -c 300); its log: $(grep notify gw2.log | tail -2)"
gw_log "OK 5: $n GpuXidError alerts delivered to Alertmanager over https with basic auth"

# 6. gw2 forwarded what it accepted to gw over https with the write token
q='sum(count_over_time(DCGM_FI_DEV_GPU_TEMP[3h]))'
total() { curl -sS --max-time 10 "$@" --data-urlencode "query=$q" |
          python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'; }
want=$(total "http://127.0.0.1:$gw2_port/api/v1/query")
((want > 0)) || gw_fail "the second gpuwatch holds no DCGM_FI_DEV_GPU_TEMP samples"
got=0
for _ in $(seq 1 60); do
    got=$(total -u reader:rpass "$gw/api/v1/query")
    [[ "$got" == "$want" ]] && break
    sleep 0.5
done
[[ "$got" == "$want" ]] || gw_fail "forwarded over https: $got of $want DCGM_FI_DEV_GPU_TEMP samples arrived; $(grep -i forward gw2.log | tail -3)"
gw_log "OK 6: the second gpuwatch forwarded its $want DCGM_FI_DEV_GPU_TEMP samples over https with a bearer token"

for p in pc pb pa; do gw_stop "$p" 30 || true; done
gw_stop gw2 30 || gw_fail "the second gpuwatch exited non-zero on SIGTERM"
gw_stop gw 60 || gw_fail "gpuwatch exited non-zero on SIGTERM"
gw_log "PASS"
