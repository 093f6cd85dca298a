#!/usr/bin/env bash
# Which wins each of bench-loop's 12 variants on the simulated driver: the reference that
# synchronizes the device before each reuse (sync-cache) or the cache, with the limit (one block
# a thread, only the memsets) beside them. The same 12 variants as the GPU check's bench section
# (1 MiB and 1 to 8 MiB, two streams idle or one busy, 1, 4 and 16 threads), so that the table
# stands beside a GPU's (docs/gpu.md, "The simulator's ranking").
#
#   scripts/bench-rank.sh [--builddir DIR] [--pairs N] [--runs N]
#
# Prints a markdown table, pairs a second, best of --runs (default 3) runs, --pairs timed pairs
# (default 20000). Builds nothing: DIR (default build-bench) must hold a build.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
builddir=$repo/build-bench
pairs=20000
runs=3
while [ $# -gt 0 ]; do
    case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
for n in "$pairs" "$runs"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench-rank.sh: not a positive number: $n" >&2; exit 2; }
done
loop=$builddir/tests/bench/bench-loop
shim=$builddir/shim/libcachealloc.so
[ -x "$loop" ] && [ -f "$shim" ] || { echo "bench-rank.sh: no build in $builddir" >&2; exit 2; }
export LD_LIBRARY_PATH=$builddir/tests/simdevice/driver:${CUDA_PATH:-/usr/local/cuda}/lib64
export SIMDEV_MEMORY=${SIMDEV_MEMORY:-8G} CACHEALLOC_STATS=0

best() {  # mode sizes busy threads: the best pairs a second of $runs runs
    local args=(--sizes "$2" --threads "$4" --streams 2 --busy "$3" --pairs "$pairs"
                --warmup 1000) b=0 r v out
    for ((r = 0; r < runs; r++)); do
        case $1 in
        sync) out=$(env -u LD_PRELOAD "$loop" "${args[@]}" --sync-cache) ;;
        limit) out=$(env -u LD_PRELOAD "$loop" "${args[@]}" --limit) ;;
        cache) out=$(env LD_PRELOAD="$shim" "$loop" "${args[@]}") ;;
        esac
        v=$(sed -n 's/^pairs_per_s=//p' <<<"$out")
        [ "${v:-0}" -gt "$b" ] && b=$v
    done
    echo "$b"
}

echo "| loop | threads | sync-cache | cache | limit | cache / sync-cache | wins |"
echo "|---|---|---|---|---|---|---|"
for sizes in fixed random; do
    for busy in 0 1; do
        name="$([ "$sizes" = fixed ] && echo "1 MiB" || echo "1 to 8 MiB"), $([ "$busy" = 0 ] && echo "idle streams" || echo "one busy")"
        for t in 1 4 16; do
            s=$(best sync "$sizes" "$busy" "$t")
            c=$(best cache "$sizes" "$busy" "$t")
            l=$(best limit "$sizes" "$busy" "$t")
            awk -v n="$name" -v t="$t" -v s="$s" -v c="$c" -v l="$l" 'BEGIN {
                printf "| %s | %d | %d | %d | %d | %.2f | %s |\n", n, t, s, c, l,
                    s > 0 ? c / s : 0, c >= s ? "cache" : "sync-cache" }'
        done
    done
done
