#!/usr/bin/env bash
# Which wins each of bench-loop's 12 variants on the simulated driver: the reference that
# synchronizes the device before each reuse (sync-cache) or the cache, under its default fence
# policy and under CACHEALLOC_FENCES=events, with the limit (one block a thread, only the
# memsets) beside them. The same 12 variants as the GPU check's bench section (1 MiB and 1 to
# 8 MiB, two streams idle or one busy, 1, 4 and 16 threads), so that the table stands beside a
# GPU's (docs/gpu.md, "The simulator's ranking").
#
#   scripts/bench-rank.sh [--builddir DIR] [--pairs N] [--runs N]
#
# Prints a markdown table of pairs a second, each the median of --runs (default 5) runs of
# --pairs timed pairs (default 10000), the modes' runs interleaved so that a slow stretch of a
# shared machine falls on all of them. Builds nothing: DIR (default build-bench) must hold a
# build.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
builddir=$repo/build-bench
pairs=10000
runs=5
while [ $# -gt 0 ]; do
    case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
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

once() {  # mode sizes busy threads: pairs a second of one run
    local args=(--sizes "$2" --threads "$4" --streams 2 --busy "$3" --pairs "$pairs"
                --warmup 500) out
    case $1 in
    sync) out=$(env -u LD_PRELOAD "$loop" "${args[@]}" --sync-cache) ;;
    limit) out=$(env -u LD_PRELOAD "$loop" "${args[@]}" --limit) ;;
    cache) out=$(env -u CACHEALLOC_FENCES LD_PRELOAD="$shim" "$loop" "${args[@]}") ;;
    events) out=$(env CACHEALLOC_FENCES=events LD_PRELOAD="$shim" "$loop" "${args[@]}") ;;
    esac
    sed -n 's/^pairs_per_s=//p' <<<"$out"
}

median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "| loop | threads | sync-cache | cache | cache, events | limit | cache / sync-cache | events / sync-cache |"
echo "|---|---|---|---|---|---|---|---|"
for sizes in fixed random; do
    for busy in 0 1; do
        name="$([ "$sizes" = fixed ] && echo "1 MiB" || echo "1 to 8 MiB"), $([ "$busy" = 0 ] && echo "idle streams" || echo "one busy")"
        for t in 1 4 16; do
            declare -A got=()
            for ((r = 0; r < runs; r++)); do
                for m in sync cache events limit; do
                    got[$m]="${got[$m]:-} $(once "$m" "$sizes" "$busy" "$t")"
                done
            done
            # shellcheck disable=SC2086  # the runs' figures, one argument each
            awk -v n="$name" -v t="$t" -v s="$(median ${got[sync]})" -v c="$(median ${got[cache]})" \
                -v e="$(median ${got[events]})" -v l="$(median ${got[limit]})" 'BEGIN {
                printf "| %s | %d | %d | %d | %d | %d | %.2f | %.2f |\n", n, t, s, c, e, l,
                    (s > 0 ? c / s : 0), (s > 0 ? e / s : 0) }'
            unset got
        done
    done
done
