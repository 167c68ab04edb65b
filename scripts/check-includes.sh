#!/usr/bin/env bash
# check-includes.sh - checks every #include in src/ and include/gpuwatch/
# against the layers of docs/architecture.md. Run by `make test`.
#
# Usage: scripts/check-includes.sh [SOURCE_ROOT]     (default: the repo root)
# Exit 0 when clean, 1 after listing each violation as FILE:LINE: RULE: detail.
#
# Rules
#   layer    a file of module M includes a public header (gpuwatch/*.h) only
#            when the header's module is on M's layer or below;
#   private  headers under src/<N>/ (N's *_int.h and the like) are included
#            only by files of src/<N>/;
#   library  a third-party library's header is included only by the module
#            that owns the library (lmdb.h: store; microhttpd.h: http; ...);
#   table    every src/<module>/ and every include/gpuwatch/*.h is in the
#            tables below, and every quoted include resolves to a file.
# tests/, bench/ and tests/fuzz/ are not checked: white-box tests may include
# a module's private headers and libraries.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# Layer of every module (src/<module>/), bottom up. Keep in step with
# docs/architecture.md.
declare -A LAYER=(
    [base]=0                                   # L0 base
    [chunk]=1 [model]=1 [index]=1              # L1 encoding
    [wal]=2 [head]=2 [store]=2 [ingest]=2 [net]=2  # L2 storage and wire
    [db]=3                                     # L3 database
    [promql]=4 [alert]=4 [detect]=4 [sim]=4 [ledger]=4 [forward]=4  # L4 features
    [eval]=5 [http]=5                          # L5 services
    [cli]=6                                    # L6 the gpuwatch command
)

# Module of every public header.
declare -A OWNER=(
    [err.h]=base [log.h]=base [buf.h]=base [arena.h]=base [metrics.h]=base [progress.h]=base [codec.h]=base [json.h]=base
    [chunk.h]=chunk [block.h]=chunk
    [labels.h]=model [matcher.h]=model
    [postings.h]=index
    [wal.h]=wal [head.h]=head [store.h]=store [kv.h]=store [rw.h]=ingest [httpc.h]=net
    [db.h]=db [exemplars.h]=db
    [promql.h]=promql [alert.h]=alert [detect.h]=detect [sim.h]=sim [ledger.h]=ledger
    [forward.h]=forward
    [evaluate.h]=eval [http.h]=http
)

# Module that owns each library (angle-bracket includes; other <...> headers
# are the C library and POSIX). protobuf-c's generated *.pb-c.h count as
# protobuf-c.
declare -A LIBOWNER=(
    [lmdb.h]=store
    [microhttpd.h]=http
    [gnutls/gnutls.h]=http [gnutls/x509.h]=http [gnutls/abstract.h]=http [gnutls/crypto.h]=http
    [protobuf-c/protobuf-c.h]=ingest [pb-c.h]=ingest
    [snappy-c.h]=ingest
    [zstd.h]=chunk
    [pcre2.h]=model
    [xxhash.h]=base
    [jansson.h]=ledger
)

# Known violations in today's tree, "FILE|HEADER" with the reason. Remove an
# entry when its include goes; add none without a reason and an issue.
declare -A ALLOW=(
)

declare -A ALLOW_USED=()
nviol=0
violation() { # file line rule detail
    local f=$1 line=$2 rule=$3 detail=$4 hdr=$5
    if [[ -n "${ALLOW[$f|$hdr]:-}" && "${ALLOW[$f|$hdr]}" == "$rule" ]]; then
        ALLOW_USED[$f|$hdr]=1
        return
    fi
    echo "$f:$line: $rule: $detail"
    nviol=$((nviol + 1))
}

# Every module directory must be in the table.
for d in src/*/; do
    m=$(basename "$d")
    [[ -n "${LAYER[$m]:-}" ]] || violation "$d" 0 table "module $m has no layer (add it to LAYER here and to docs/architecture.md)" ""
done
for h in include/gpuwatch/*.h; do
    b=$(basename "$h")
    [[ -n "${OWNER[$b]:-}" ]] || violation "$h" 0 table "public header $b has no module (add it to OWNER here)" ""
done

files=$( { find src -name '*.[ch]'; find include/gpuwatch -name '*.h'; } | LC_ALL=C sort)
while IFS=$'\t' read -r f line kind hdr; do
    case $f in
        include/gpuwatch/*) m=${OWNER[$(basename "$f")]:-} ;;
        src/*/*) m=${f#src/}; m=${m%%/*} ;;
        *) m= ;;
    esac
    [[ -n "$m" && -n "${LAYER[$m]:-}" ]] || continue   # reported above
    lm=${LAYER[$m]}
    if [[ $kind == '<' ]]; then
        key=$hdr
        [[ $hdr == *.pb-c.h ]] && key=pb-c.h
        owner=${LIBOWNER[$key]:-}
        if [[ -n "$owner" && "$owner" != "$m" ]]; then
            violation "$f" "$line" library "<$hdr> belongs to $owner, included from $m" "$hdr"
        fi
        continue
    fi
    # quoted includes
    if [[ $hdr == gpuwatch/* ]]; then
        b=${hdr#gpuwatch/}
        n=${OWNER[$b]:-}
        if [[ -z "$n" ]]; then
            violation "$f" "$line" table "\"$hdr\" is not a known public header" "$hdr"
        elif ((LAYER[$n] > lm)); then
            violation "$f" "$line" layer "$m (L$lm) includes \"$hdr\" of $n (L${LAYER[$n]})" "$hdr"
        fi
    elif [[ $hdr == *.pb-c.h ]]; then
        if [[ "${LIBOWNER[pb-c.h]}" != "$m" ]]; then
            violation "$f" "$line" library "\"$hdr\" (protobuf-c) belongs to ${LIBOWNER[pb-c.h]}, included from $m" "$hdr"
        fi
    else
        if [[ -f "src/$hdr" && $hdr == */* ]]; then
            n=${hdr%%/*}
        elif [[ -f "$(dirname "$f")/$hdr" ]]; then
            n=$(dirname "$f"); n=${n#src/}; n=${n%%/*}
            [[ $f == include/* ]] && n=public
        else
            violation "$f" "$line" table "\"$hdr\" does not resolve to src/$hdr or next to $f" "$hdr"
            continue
        fi
        if [[ "$n" != "$m" ]]; then
            violation "$f" "$line" private "\"$hdr\" is private to src/$n/, included from $m" "$hdr"
        fi
    fi
done < <(
    # FILE TAB LINE TAB KIND('<' or '"') TAB HEADER, one per #include
    # shellcheck disable=SC2086
    awk '
        match($0, /^[ \t]*#[ \t]*include[ \t]*[<"][^>"]+[>"]/) {
            s = substr($0, RSTART, RLENGTH)
            sub(/^[ \t]*#[ \t]*include[ \t]*/, "", s)
            kind = substr(s, 1, 1)
            h = substr(s, 2, length(s) - 2)
            printf "%s\t%d\t%s\t%s\n", FILENAME, FNR, kind, h
        }' $files
)

for k in "${!ALLOW[@]}"; do
    [[ -n "${ALLOW_USED[$k]:-}" ]] || echo "check-includes: note: allow-list entry '$k' no longer matches; remove it" >&2
done

if ((nviol)); then
    echo "check-includes: $nviol violation(s) of the layering in docs/architecture.md" >&2
    exit 1
fi
echo "check-includes: ok ($(echo "$files" | wc -l) files)"
