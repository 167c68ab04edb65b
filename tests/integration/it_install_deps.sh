#!/usr/bin/env bash
# it_install_deps.sh - scripts/install-deps.sh never stops or restarts a
# service it did not start. Runs the script against stand-ins for
# dpkg-query, apt-get, systemctl and id (first on PATH) that keep service
# state in files, so nothing on this machine is installed or touched:
#   1. --dry-run lists the missing packages and the running services and
#      calls neither apt-get nor systemctl stop;
#   2. an install while prometheus runs: apt-get runs with a policy-rc.d
#      that refuses service starts (Alertmanager's postinst start is
#      refused), a service a trigger starts anyway (victoria-metrics) is
#      stopped afterwards, prometheus (running before) is neither stopped
#      nor restarted, and the machine's own policy-rc.d is put back;
#   3. nothing missing: exit 0, no apt-get.
# Usage: bash it_install_deps.sh <build_dir>
source "$(dirname "$0")/lib.sh" "$@"
src=$(cd "$GW_IT_DIR/../.." && pwd)
fake="$GW_TMP/bin"
state="$GW_TMP/state"
mkdir -p "$fake" "$state/active"
export FAKE_STATE="$state"

cat >"$fake/dpkg-query" <<'SH'
#!/usr/bin/env bash
# dpkg-query -W -f='${Status}' PKG: installed unless PKG is in $state/missing
pkg=${!#}
if grep -qx "$pkg" "$FAKE_STATE/missing" 2>/dev/null; then exit 1; fi
printf 'install ok installed'
SH
cat >"$fake/apt-get" <<'SH'
#!/usr/bin/env bash
echo "apt-get $*" >>"$FAKE_STATE/log"
[[ "$1" == install ]] || exit 0
for pkg in "$@"; do
    case $pkg in -*|install) continue ;; esac
    sed -i "/^$pkg\$/d" "$FAKE_STATE/missing"
    case $pkg in prometheus|prometheus-node-exporter|prometheus-alertmanager|victoria-metrics) ;; *) continue ;; esac
    # what a postinst does: invoke-rc.d asks policy-rc.d first (101: do not start)
    rc=0
    [[ -x "$GW_POLICY_RC_D" ]] && { "$GW_POLICY_RC_D" "$pkg" start || rc=$?; }
    echo "postinst $pkg policy=$rc" >>"$FAKE_STATE/log"
    if ((rc != 101)) || [[ " ${FAKE_FORCE_START:-} " == *" $pkg "* ]]; then
        touch "$FAKE_STATE/active/$pkg"
        echo "started $pkg" >>"$FAKE_STATE/log"
    fi
done
SH
cat >"$fake/systemctl" <<'SH'
#!/usr/bin/env bash
echo "systemctl $*" >>"$FAKE_STATE/log"
case $1 in
    is-active) svc=${!#}; [[ -e "$FAKE_STATE/active/$svc" ]] ;;
    stop) rm -f "$FAKE_STATE/active/$2" ;;
    restart|start|reload|try-restart) echo "unexpected systemctl $*" >>"$FAKE_STATE/bad"; exit 1 ;;
    *) exit 0 ;;
esac
SH
printf '#!/usr/bin/env bash\n[[ "$1" == -u ]] && echo 0 || /usr/bin/id "$@"\n' >"$fake/id"
chmod +x "$fake"/*
export PATH="$fake:$PATH"
export GW_POLICY_RC_D="$GW_TMP/policy-rc.d"

# 1. dry run
printf 'prometheus-alertmanager\nvictoria-metrics\n' >"$state/missing"
touch "$state/active/prometheus"
bash "$src/scripts/install-deps.sh" --dry-run >"$GW_TMP/dry.out" 2>&1 || { cat "$GW_TMP/dry.out" >&2; gw_fail "--dry-run failed"; }
grep -q 'would install: victoria-metrics prometheus-alertmanager' "$GW_TMP/dry.out" || gw_fail "dry run: $(cat "$GW_TMP/dry.out")"
grep -q 'services active now (left alone): prometheus' "$GW_TMP/dry.out" || gw_fail "dry run: $(cat "$GW_TMP/dry.out")"
if grep -q '^apt-get\|systemctl stop' "$state/log"; then gw_fail "dry run changed something: $(cat "$state/log")"; fi
[[ ! -e "$GW_POLICY_RC_D" ]] || gw_fail "dry run wrote $GW_POLICY_RC_D"
gw_log "dry run: ok"

# 2. the install, with a policy-rc.d of the machine's own in place
printf '#!/bin/sh\nexit 0\n' >"$GW_POLICY_RC_D"
chmod 755 "$GW_POLICY_RC_D"
cp "$GW_POLICY_RC_D" "$GW_TMP/policy.orig"
: >"$state/log"
printf 'prometheus\nprometheus-alertmanager\nvictoria-metrics\n' >"$state/missing"
FAKE_FORCE_START=victoria-metrics bash "$src/scripts/install-deps.sh" >"$GW_TMP/inst.out" 2>&1 ||
    { cat "$GW_TMP/inst.out" "$state/log" >&2; gw_fail "install failed"; }
cat "$GW_TMP/inst.out" >&2
grep -q 'postinst prometheus-alertmanager policy=101' "$state/log" || gw_fail "apt-get ran without a policy-rc.d refusing starts: $(cat "$state/log")"
[[ ! -e "$state/active/prometheus-alertmanager" ]] || gw_fail "Alertmanager was started"
[[ ! -e "$state/active/victoria-metrics" ]] || gw_fail "victoria-metrics, started by the install, is still running"
grep -q 'systemctl stop victoria-metrics' "$state/log" || gw_fail "victoria-metrics was not stopped"
[[ -e "$state/active/prometheus" ]] || gw_fail "prometheus, running before the install, was stopped"
if grep -q 'systemctl stop prometheus$' "$state/log"; then gw_fail "prometheus was stopped"; fi
[[ ! -e "$state/bad" ]] || gw_fail "$(cat "$state/bad")"
cmp -s "$GW_POLICY_RC_D" "$GW_TMP/policy.orig" || gw_fail "the machine's policy-rc.d was not put back"
[[ ! -e "$GW_POLICY_RC_D.gpuwatch-install-deps" ]] || gw_fail "the saved policy-rc.d was left behind"
gw_log "install: starts refused, only the service the install started was stopped, policy-rc.d restored"

# 2b. without a policy-rc.d of its own, none is left behind
rm -f "$GW_POLICY_RC_D"
printf 'prometheus-node-exporter\n' >"$state/missing"
bash "$src/scripts/install-deps.sh" >"$GW_TMP/inst2.out" 2>&1 || { cat "$GW_TMP/inst2.out" >&2; gw_fail "second install failed"; }
[[ ! -e "$GW_POLICY_RC_D" ]] || gw_fail "install-deps left its policy-rc.d behind"
[[ ! -e "$state/active/prometheus-node-exporter" ]] || gw_fail "node exporter was started"

# 3. nothing missing
: >"$state/missing"
: >"$state/log"
bash "$src/scripts/install-deps.sh" >"$GW_TMP/none.out" 2>&1 || gw_fail "nothing missing: exit $?"
if grep -q '^apt-get' "$state/log"; then gw_fail "apt-get ran with nothing missing"; fi
gw_log "PASS"
