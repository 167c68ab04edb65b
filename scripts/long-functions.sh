#!/usr/bin/env bash
# long-functions.sh - finds hand-written functions in src/ longer than a
# limit (default 150 lines). Run by `make test` next to check-includes.
#
# Usage: scripts/long-functions.sh [-a] [-n LIMIT] [SOURCE_ROOT]
#   -a        list every function (FILE:LINE:NAME:LENGTH), longest first
#   -n LIMIT  the limit in lines (default 150)
# Prints FILE:LINE:NAME:LENGTH for each function over the limit that is not
# allow-listed below and exits 1 when there is one, else 0.
#
# A function is a definition that starts at column 0 and whose body ends
# at the first `}` in column 0 after it (the tree's style: the function's
# braces, and only those, sit in column 0); LINE is the line of its name,
# LENGTH counts from there to the closing brace.
set -euo pipefail

limit=150
all=0
while getopts "an:" o; do
    case $o in
        a) all=1 ;;
        n) limit=$OPTARG ;;
        *) echo "usage: $0 [-a] [-n LIMIT] [SOURCE_ROOT]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# Functions allowed over the limit: "FILE:NAME". Empty: every function
# that grew past it was split along its phases (issue 11). Add none
# without a reason and an issue.
ALLOW=()

list_functions() { # FILE...: FILE:LINE:NAME:LENGTH for every function
    awk '
    function flush_sig() { sig = ""; sigline = 0 }
    FNR == 1 { flush_sig(); inbody = 0; incomment = 0 }
    {
        line = $0
        # drop comments (good enough for column-0 structure)
        if (incomment) {
            if (index(line, "*/")) { line = substr(line, index(line, "*/") + 2); incomment = 0 }
            else next
        }
        while (match(line, /\/\*/)) {
            rest = substr(line, RSTART + 2)
            if (index(rest, "*/")) line = substr(line, 1, RSTART - 1) substr(rest, index(rest, "*/") + 2)
            else { line = substr(line, 1, RSTART - 1); incomment = 1 }
        }
        sub(/\/\/.*/, "", line)
    }
    inbody {
        if (line ~ /^}/) {
            printf "%s:%d:%s:%d\n", FILENAME, start, name, FNR - start + 1
            inbody = 0
        }
        next
    }
    # a signature: starts in column 0 with an identifier, has "(" and no ";"
    # before its "{"; the name is the identifier before the first "("
    line ~ /^[A-Za-z_]/ && line !~ /^(typedef|(struct|enum|union)( [A-Za-z_0-9]+)? *\{)/ && index(line, "(") && sig == "" {
        sig = line; sigline = FNR
    }
    sig != "" && sigline != FNR && line !~ /^[ \t]*$/ && line !~ /^\{/ { sig = sig " " line }
    sig != "" {
        if (index(sig, ";") && !index(sig, "{")) { flush_sig(); next }
        if (line ~ /^\{/ || line ~ /\)[ \t]*\{/) {
            s = sig
            gsub(/__attribute__ *\(\([^)]*(\([^)]*\))?[^)]*\)\)/, "", s)
            s = substr(s, 1, index(s, "(") - 1)
            n = split(s, parts, /[^A-Za-z_0-9]+/)
            name = parts[n]; if (name == "" && n > 1) name = parts[n - 1]
            if (name ~ /^[A-Za-z_]/ && s !~ /=/) { start = sigline; inbody = 1 }
            flush_sig()
            if (inbody && line ~ /\)[ \t]*\{.*}[ \t]*$/) {   # one-line body
                printf "%s:%d:%s:%d\n", FILENAME, start, name, 1; inbody = 0
            }
        }
        if (line ~ /^[ \t]*$/) flush_sig()
    }
    ' "$@"
}

files=$(find src -name '*.c' | LC_ALL=C sort)
# shellcheck disable=SC2086
out=$(list_functions $files | sort -t: -k4,4nr -k1,1 -k2,2n)
if ((all)); then
    echo "$out"
    exit 0
fi

declare -A ALLOWED=() ALLOW_USED=()
for a in "${ALLOW[@]}"; do ALLOWED[$a]=1; done
nviol=0
while IFS=: read -r f line name len; do
    [[ -n "$f" ]] || continue
    ((len > limit)) || continue
    if [[ -n "${ALLOWED[$f:$name]:-}" ]]; then
        ALLOW_USED[$f:$name]=1
        continue
    fi
    echo "$f:$line:$name:$len"
    nviol=$((nviol + 1))
done <<<"$out"
for k in "${ALLOW[@]}"; do
    [[ -n "${ALLOW_USED[$k]:-}" ]] || echo "long-functions: note: allow-list entry '$k' is no longer over $limit lines; remove it" >&2
done
if ((nviol)); then
    echo "long-functions: $nviol function(s) over $limit lines (split them along their phases)" >&2
    exit 1
fi
echo "long-functions: ok (no function over $limit lines outside the allow-list)"
