#!/usr/bin/env bash
# run_query_instr_ab.sh - compares the work two gpuwatch builds do for the
# same dashboard queries by counting instructions (valgrind callgrind), which
# the load of a shared machine does not disturb the way it disturbs wall time.
#
# Data: gw_rwload (dcgm-exporter + node_exporter shaped, 15 s) for NODES nodes
# over HOURS hours, written through the FIRST binary's serve, flushed, stopped.
# Both binaries then evaluate the same range queries (1 h at 15 s, the 1 h
# panels of bench/dashboard_queries.txt with Grafana's variables filled in)
# with `gpuwatch query --data-dir` (the query engine and the store read path,
# no HTTP) under callgrind. Reported per query: instructions of the whole
# process, and without the dynamic loader (ld.so's symbol binding at process
# start depends on the libraries linked, not on the query path), and whether
# both answers are byte-identical.
#
# Usage: bench/run_query_instr_ab.sh --a BIN --b BIN [--rwload BIN]
#          [--nodes 2] [--hours 6] [--out FILE]
set -euo pipefail

a="" b="" rwload="" nodes=2 hours=6 out=""
while (($#)); do
    case "$1" in
    --a) a=$2; shift 2 ;;
    --b) b=$2; shift 2 ;;
    --rwload) rwload=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --hours) hours=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n 2,19p "$0"; exit 0 ;;
    *) echo "run_query_instr_ab.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ -x "$a" && -x "$b" ]] || { echo "run_query_instr_ab.sh: --a and --b must name gpuwatch binaries" >&2; exit 2; }
[[ -n "$rwload" ]] || rwload="$(dirname "$a")/gw_rwload"
[[ -x "$rwload" ]] || { echo "run_query_instr_ab.sh: gw_rwload not found (--rwload)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "run_query_instr_ab.sh: valgrind is not installed" >&2; exit 2; }

work=$(mktemp -d /tmp/gw-instr-ab.XXXXXX)
pid=""
cleanup() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$a" serve --data-dir "$work/data" --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && break; sleep 0.1; done
mins=$((hours * 60))
"$rwload" send --url "http://127.0.0.1:$port/api/v1/write" --nodes "$nodes" --duration "${hours}h" \
    --start "now-$((mins + 10))m" --conns 2 >"$work/load.log" 2>&1
curl -sf -XPOST "http://127.0.0.1:$port/api/v1/admin/flush" >/dev/null
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

end=$((($(date +%s) - 900) / 15 * 15))
start=$((end - 3600))
inst="(gpu001:9400|gpu002:9400)"
gpus="(0|1|2|3|4|5|6|7)"
node="gpu001:9100"
queries=(
    "DCGM_FI_DEV_GPU_TEMP{instance=~\"$inst\", gpu=~\"$gpus\"}"
    "avg(DCGM_FI_DEV_GPU_TEMP{instance=~\"$inst\", gpu=~\"$gpus\"})"
    "DCGM_FI_DEV_SM_CLOCK{instance=~\"$inst\", gpu=~\"$gpus\"} * 1000000"
    "100 * (1 - avg(rate(node_cpu_seconds_total{mode=\"idle\", instance=\"$node\"}[1m])))"
    "scalar(node_load1{instance=\"$node\",job=\"node\"}) * 100 / count(count(node_cpu_seconds_total{instance=\"$node\",job=\"node\"}) by (cpu))"
    "sum by(instance) (rate(node_cpu_seconds_total{instance=\"$node\",job=\"node\", mode=\"user\"}[1m])) / on(instance) group_left sum by (instance)((rate(node_cpu_seconds_total{instance=\"$node\",job=\"node\"}[1m])))"
    "rate(node_network_receive_bytes_total{instance=\"$node\",job=\"node\"}[1m])*8"
)

# Sum of the self cost of every function outside the dynamic loader.
no_ld() {
    callgrind_annotate --inclusive=no --threshold=100 --auto=no "$1" 2>/dev/null | awk '
        /file:function/ { t = 1; next }
        t && /^-+$/ { next }
        t && NF == 0 && c > 0 { exit }
        t && /^ *[0-9,]+ \(/ { c++; if ($0 ~ /ld-linux/) next; v = $1; gsub(",", "", v); s += v }
        END { printf "%d", s }'
}
total() { grep -m1 '^summary:' "$1" | awk '{print $2}'; }

{
    echo "# Query instructions A/B $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "A: $a ($("$a" --version 2>/dev/null | head -1))"
    echo "B: $b ($("$b" --version 2>/dev/null | head -1))"
    echo "Data: gw_rwload, $nodes node(s), $hours h at 15 s; range [$start, $end] step 15 s; gpuwatch query --data-dir under callgrind."
    echo
    echo "| query | A instr | B instr | B/A | A instr without ld.so | B instr without ld.so | B/A | same answer |"
    echo "|---|---|---|---|---|---|---|---|"
    i=0
    for q in "${queries[@]}"; do
        i=$((i + 1))
        for s in a b; do
            bin=$a; [[ $s == b ]] && bin=$b
            valgrind --tool=callgrind --callgrind-out-file="$work/cg.$s.$i" "$bin" query "$q" \
                --data-dir "$work/data" --start "$start" --end "$end" --step 15s --json >"$work/out.$s.$i" 2>/dev/null
        done
        ta=$(total "$work/cg.a.$i"); tb=$(total "$work/cg.b.$i")
        la=$(no_ld "$work/cg.a.$i"); lb=$(no_ld "$work/cg.b.$i")
        same=no; cmp -s "$work/out.a.$i" "$work/out.b.$i" && same=yes
        printf '| `%s` | %d | %d | %.4f | %d | %d | %.4f | %s |\n' "$(q60=${q:0:60}; echo "${q60//|/\\|}")" "$ta" "$tb" \
            "$(echo "$tb / $ta" | bc -l)" "$la" "$lb" "$(echo "$lb / $la" | bc -l)" "$same"
    done
} >"$work/table.md"
cat "$work/table.md"
if [[ -n "$out" ]]; then cp "$work/table.md" "$out"; fi
