#!/usr/bin/env bash
# powercut_shim_test.sh - the power-cut layer itself: powercut_writer does a
# fixed set of synced and unsynced writes, truncations and creations under
# powercut_shim.so and exits without syncing; the files must show every
# write before the restore (so the writes happened) and, after
# powercut_restore.py, exactly the synced state (see powercut_writer.c for
# the expected contents). Then the torn mode on copies: each unsynced write
# either stays or goes, per page, and at least 3 outcomes occur over 6 seeds.
#
# Usage: bash powercut_shim_test.sh <build_dir>
# syncfs() of a disk file system with other work's dirty pages can take
# seconds: the files live on tmpfs when there is one (the shim does not care).
if [[ -z ${GW_TEST_TMP:-} && -d /dev/shm && -w /dev/shm ]]; then export GW_TEST_TMP=/dev/shm; fi
source "$(dirname "$0")/../integration/lib.sh" "$@"
shim="$GW_BUILD/powercut_shim.so"
writer="$GW_BUILD/powercut_writer"
restore="$GW_IT_DIR/../faults/powercut_restore.py"
[[ -f $shim && -x $writer ]] || gw_fail "$shim or $writer not built"

d="$GW_TMP/d"
j="$GW_TMP/journal"
mkdir -p "$d"
GW_PC_DIR="$d" GW_PC_JOURNAL="$j" LD_PRELOAD="$shim" "$writer" "$d" || gw_fail "powercut_writer failed"
[[ -s $j ]] || gw_fail "the shim wrote no journal"

# expect FILE WHEN PIECE...: FILE holds the PIECEs in order, each "=TEXT"
# or "CHAR*COUNT"; "absent": FILE does not exist.
expect() {
    local f=$1 when=$2
    shift 2
    if [[ $1 == absent ]]; then
        [[ ! -e $f ]] || gw_fail "$when: $(basename "$f") exists, want it absent"
        return
    fi
    local p
    for p in "$@"; do
        if [[ $p == =* ]]; then printf '%s' "${p#=}"; else head -c "${p#*\*}" /dev/zero | tr '\0' "${p%%\**}"; fi
    done >"$GW_TMP/want"
    cmp -s "$f" "$GW_TMP/want" || gw_fail "$when: $(basename "$f") is '$(head -c 60 "$f" 2>/dev/null)'..., want $*"
}
# before the restore: every write is there
expect "$d/a" "before restore" =BBBB "A*4092" "C*100"
expect "$d/d" "before restore" "D*10"
expect "$d/e" "before restore" =RRz
expect "$d/g" "before restore" =gone
[[ -d $d/sub ]] || gw_fail "before restore: sub/ missing"

# a kill while the shim appends a record leaves it cut short: that record's
# write never ran, so the restore drops it (inside the pre-image, inside the
# header) and still applies the others
# (--dir elsewhere: only the reading of the journal is checked here)
mkdir -p "$GW_TMP/elsewhere"
for cut in 3 20; do
    cp "$j" "$j.cut"
    truncate -s "-$cut" "$j.cut"
    err=$(python3 "$restore" --dir "$GW_TMP/elsewhere" --journal "$j.cut" 2>&1 >/dev/null) ||
        gw_fail "restore refused a journal cut $cut bytes before its end: $err"
    [[ $err == *"dropped"* ]] || gw_fail "restore did not say it dropped the cut record: $err"
done
out=$(python3 "$restore" --dir "$d" --journal "$j") || gw_fail "restore failed: $out"
gw_log "restore: $out"
expect "$d/a" "after restore" "A*4096"
expect "$d/b" "after restore" =hello
expect "$d/c" "after restore" =new
expect "$d/d" "after restore" "D*8192"
expect "$d/e" "after restore" =QQz
expect "$d/f" "after restore" =sync
expect "$d/g" "after restore" absent
[[ ! -e $d/sub ]] || gw_fail "after restore: sub/ (created, directory not synced) still there"

# torn: the journal names inodes, so each seed gets a fresh run of the writer.
declare -A seen=()
for seed in $(seq 1 6); do
    t="$GW_TMP/t$seed"
    tj="$GW_TMP/tj$seed"
    mkdir -p "$t"
    GW_PC_DIR="$t" GW_PC_JOURNAL="$tj" LD_PRELOAD="$shim" "$writer" "$t" || gw_fail "powercut_writer failed"
    python3 "$restore" --dir "$t" --journal "$tj" --torn "$seed" >/dev/null || gw_fail "torn restore failed"
    a4=$(head -c 4 "$t/a")
    [[ $a4 == AAAA || $a4 == BBBB ]] || gw_fail "torn: a starts with '$a4'"
    sa=$(stat -c %s "$t/a")
    [[ $sa == 4096 || $sa == 4196 ]] || gw_fail "torn: a has size $sa"
    expect "$t/c" "torn seed $seed" =new
    expect "$t/f" "torn seed $seed" =sync
    e=$(cat "$t/e")
    [[ $e == QQz || $e == RRz ]] || gw_fail "torn: e is '$e'"
    seen["$a4 $sa $e"]=1
done
((${#seen[@]} >= 3)) || gw_fail "torn mode gave only ${#seen[@]} distinct outcomes over 6 seeds: ${!seen[*]}"
gw_log "PASS (torn outcomes: ${#seen[@]})"
