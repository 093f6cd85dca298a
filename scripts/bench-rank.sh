#!/usr/bin/env bash
# Which way of reusing a freed block wins each of bench-loop's 12 variants on the simulated
# driver, under each of its price profiles: the plain runtime, the reference that synchronizes
# the device before each reuse (sync-cache), the cache under CACHEALLOC_FENCES=device, =events
# and its default (unset), the cache with CACHEALLOC_REUSE=sync, the default with the larger
# memory bound CACHEALLOC_RESERVE_FACTOR=8, the default measured again (the table's own noise),
# and the limit (one block a thread, only the memsets). The same variants and columns as the GPU
# check's "reuse" section (scripts/gpu/reuse_table.py defines both), so that the tables stand
# side by side.
#
#   scripts/bench-rank.sh [--builddir DIR] [--profiles LIST] [--variants LIST]
#                         [--pairs N] [--runs N]
#
# --profiles: SIMDEV_PROFILE values, comma-separated (default provisional,gpu,sync-dear,
#   events-dear; a value with a '/' is a file of SIMDEV_NAME=value lines, such as the GPU
#   check's OUTDIR/simdev-profile.env). One markdown table a profile, and a verdict line.
# --variants: sizes:busy:threads, comma-separated (default all 12: fixed|random, 0|1, 1|4|16),
#   e.g. fixed:0:1,random:1:4.
# --pairs: timed pairs a run (default 10000; the plain runtime gets a tenth), after 500 warm-up
#   pairs a thread. --runs: runs a mode (default 3), interleaved across the modes so that a slow
#   stretch of a shared machine falls on all of them; each cell is their median. At the
#   defaults one profile's table takes about two minutes on 2 shared CPUs.
# Builds nothing: DIR (default build-bench) must hold bench-loop, the shim and the simulator.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
table=$repo/scripts/gpu/reuse_table.py
builddir=$repo/build-bench
pairs=10000
runs=3
profiles=provisional,gpu,sync-dear,events-dear
variants=
usage() { sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case $1 in
    --builddir) builddir=$2 ;;
    --pairs) pairs=$2 ;;
    --runs) runs=$2 ;;
    --profiles) profiles=$2 ;;
    --variants) variants=$2 ;;
    *) usage ;;
    esac
    shift 2
done
for n in "$pairs" "$runs"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench-rank.sh: not a positive number: $n" >&2; exit 2; }
done
[ "$pairs" -ge 10 ] || { echo "bench-rank.sh: --pairs needs at least 10" >&2; exit 2; }
vlist=$(python3 "$table" variants "${variants:-all}")
# Each mode's environment and flags, from reuse_table.MODES (the GPU check's too).
declare -A mode_cached mode_env mode_flags
modes=()
while read -r key cached rest; do
    modes+=("$key")
    mode_cached[$key]=$cached
    mode_env[$key]=${rest%%--*}
    mode_flags[$key]=${rest#*--}
done < <(python3 "$table" modes)
IFS=, read -r -a plist <<<"$profiles"
for p in "${plist[@]}"; do
    case $p in
    */*) [ -f "$p" ] || { echo "bench-rank.sh: no profile file $p" >&2; exit 2; } ;;
    provisional|gpu|sync-dear|events-dear) ;;
    *) echo "bench-rank.sh: unknown profile $p (provisional, gpu, sync-dear, events-dear, or a path with a '/')" >&2; exit 2 ;;
    esac
done
loop=$builddir/tests/bench/bench-loop
shim=$builddir/shim/libcachealloc.so
if [ ! -x "$loop" ] || [ ! -f "$shim" ]; then
    echo "bench-rank.sh: no build in $builddir" >&2
    exit 2
fi
export LD_LIBRARY_PATH=$builddir/tests/simdevice/driver:${CUDA_PATH:-/usr/local/cuda}/lib64
export SIMDEV_MEMORY=${SIMDEV_MEMORY:-8G} CACHEALLOC_STATS=0
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

once() {  # mode variant: "VARIANT MODE PAIRS_PER_S RESERVED" of one run, or nothing on failure
    local n=$pairs args out env flags
    [ "$1" = plain ] && n=$((pairs / 10))
    IFS=: read -r sizes busy threads <<<"$2"
    read -r -a flags <<<"${mode_flags[$1]}"
    args=(--sizes "$sizes" --threads "$threads" --streams 2 --busy "$busy" --pairs "$n"
          --warmup 500 "${flags[@]}")
    # The caller's own settings never reach a mode: the default is the cache's own.
    local pre=(env -u LD_PRELOAD -u CACHEALLOC_FENCES -u CACHEALLOC_REUSE -u CACHEALLOC_RESERVE_FACTOR)
    read -r -a env <<<"${mode_env[$1]}"
    pre+=("${env[@]}")
    [ "${mode_cached[$1]}" = 1 ] && pre+=(LD_PRELOAD="$shim")
    if ! out=$("${pre[@]}" "$loop" "${args[@]}" 2>&1); then
        echo "bench-rank.sh: $1 $2 failed: $(tail -n 1 <<<"$out")" >&2
        return 0
    fi
    awk -F= -v v="$2" -v m="$1" '
        { k[$1] = $2 }
        END { r = (m == "sync") ? k["sync_cache_reserved_bytes"] : k["cache_peak_reserved_bytes"]
              if (m == "plain" || m == "limit") r = ""
              if (r == "" && m != "plain" && m != "limit") r = k["peak_reserved_bytes"]
              printf "%s %s %s %s\n", v, m, k["pairs_per_s"], (r == "" ? "-" : r) }' <<<"$out"
}

for p in "${plist[@]}"; do
    export SIMDEV_PROFILE=$p
    : >"$raw"
    for v in $vlist; do
        for ((r = 0; r < runs; r++)); do
            for m in "${modes[@]}"; do
                once "$m" "$v" >>"$raw"
            done
        done
    done
    python3 "$table" render "Profile \`$p\` (SIMDEV_PROFILE=$p): pairs a second, medians of $runs interleaved runs of $pairs pairs (plain: $((pairs / 10))); in brackets the share of the limit and the peak reserved" <"$raw"
    echo
done
