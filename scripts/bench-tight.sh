#!/usr/bin/env bash
# Do no harm at the edge of memory. For each trace, bisection finds the tightest simulated
# device on which the plain runtime (NVIDIA's, no cache) serves every request of every pass;
# on exactly that device the cache's default configuration (CUDA: expandable segments mapped a
# page a handle) must serve every request too, in every pass of every run. Also replayed there,
# once each, for comparison: plain segments (CACHEALLOC_EXPANDABLE=0), which cannot give back
# memory between live blocks, and one mapping per growth (CACHEALLOC_EXPANDABLE_PIECE=1T), the
# granularity before. Prints per trace and mode the failed requests (first pass, later passes,
# over all runs), the first pass's wall time and driver calls. docs/benchmarks.md, "At the edge
# of memory", reads the figures. Exits 1 when the default configuration failed a request.
#
#   scripts/bench-tight.sh [--builddir DIR] [--passes N] [--runs N] [--no-build]
#                          [--preload LIST] [--room SIZE] [TRACE.csv ...]
#
# --passes: passes of the trace in one process (default 10); --runs: processes of the default
# configuration on the tightest device (default 10). --preload: what LD_PRELOAD holds for the
# cache's runs (default: the build's shim; a sanitizer build's test puts its runtime first).
# --room: the simulated device on which the plain runtime's peak is first measured (default
# 80G, room for the recorded traces).
#
# Default traces: ../shared/traces/*.csv next to the repository, else tests/bench/small_trace.csv.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
builddir=$repo/build-bench
passes=10
runs=10
build=1
preload=
room=80G
traces=()

usage() {
    sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --preload) preload=$2; shift 2 ;;
    --room) room=$2; shift 2 ;;
    -h|--help) usage ;;
    --*) echo "bench-tight.sh: unknown option $1" >&2; usage ;;
    *) traces+=("$1"); shift ;;
    esac
done
[[ $passes =~ ^[1-9][0-9]*$ ]] || { echo "bench-tight.sh: not a pass count: $passes" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "bench-tight.sh: not a run count: $runs" >&2; exit 2; }
case $builddir in /*) ;; *) builddir=$PWD/$builddir ;; esac
if [ ${#traces[@]} -eq 0 ]; then
    for t in "$repo"/../shared/traces/*.csv; do
        [ -f "$t" ] && traces+=("$(cd "$(dirname "$t")" && pwd)/$(basename "$t")")
    done
    [ ${#traces[@]} -gt 0 ] || traces=("$repo/tests/bench/small_trace.csv")
fi
for t in "${traces[@]}"; do
    [ -f "$t" ] || { echo "bench-tight.sh: no trace $t" >&2; exit 1; }
done
if [ "$build" = 1 ]; then
    [ -f "$builddir/build.ninja" ] || meson setup --buildtype=debugoptimized "$builddir" "$repo" >/dev/null
    meson compile -C "$builddir" >/dev/null
fi
replay=$builddir/tests/bench/bench-replay
shim=$builddir/shim/libcachealloc.so
[ -x "$replay" ] && [ -f "$shim" ] || { echo "bench-tight.sh: $replay or $shim not built" >&2; exit 1; }
preload=${preload:-$shim}
base=(env -u LD_PRELOAD "LD_LIBRARY_PATH=$builddir/tests/simdevice/driver:${CUDA_PATH:-/usr/local/cuda}/lib64"
      CACHEALLOC_STATS=0)

val() { sed -n "s/^$1=//p" <<<"$2" | head -n 1; }

# One replay of trace $1 on a device of $2 MiB, $3 passes, in mode $4; its report on stdout.
replay_on() {
    local t=$1 mib=$2 n=$3 mode=$4 cmd
    case $mode in
    plain) cmd=("${base[@]}") ;;
    default) cmd=("${base[@]}" "LD_PRELOAD=$preload") ;;
    segments) cmd=("${base[@]}" CACHEALLOC_EXPANDABLE=0 "LD_PRELOAD=$preload") ;;
    growth) cmd=("${base[@]}" CACHEALLOC_EXPANDABLE_PIECE=1T "LD_PRELOAD=$preload") ;;
    esac
    cmd+=("SIMDEV_MEMORY=${mib}M" "$replay" "$t" --memset 8 --passes "$n")
    echo "# ${cmd[*]}" >&2
    "${cmd[@]}" 2>/dev/null || true
}

# Whether the plain runtime serves every request of every pass on a device of $2 MiB.
plain_serves() {
    local out
    out=$(replay_on "$1" "$2" "$passes" plain)
    [ "$(val alloc_failures "$out")" = 0 ] && [ "$(val later_failures "$out")" = 0 ]
}

status=0
printf '%-32s %9s %-9s %4s %7s %7s %9s %8s %8s\n' trace "device" mode runs failed later "pass1 s" mallocs creates
for t in "${traces[@]}"; do
    name=$(basename "$t")
    # Bounds: the live peak (nothing serves less), and the plain runtime's own peak use on a
    # roomy device, where the same sequence of calls is served again.
    out=$("${base[@]}" "SIMDEV_MEMORY=$room" "$replay" "$t" --memset 8) || {
        echo "bench-tight.sh: the plain replay of $t on a device of $room failed" >&2
        exit 1
    }
    lo=$(( $(val peak_live_bytes "$out") / 1048576 ))
    hi=$(( ($(val peak_reserved_bytes "$out") + 1048575) / 1048576 ))
    until plain_serves "$t" "$hi"; do lo=$hi; hi=$((hi + hi / 64 + 1)); done
    while [ $((hi - lo)) -gt 1 ]; do
        mid=$(((lo + hi) / 2))
        if plain_serves "$t" "$mid"; then hi=$mid; else lo=$mid; fi
    done
    for mode in plain default segments growth; do
        n=1
        [ "$mode" = default ] && n=$runs
        failed=0 later=0 wall= mallocs= creates=
        for ((r = 0; r < n; r++)); do
            out=$(replay_on "$t" "$hi" "$passes" "$mode")
            f=$(val alloc_failures "$out") l=$(val later_failures "$out")
            [ -n "$f" ] || { echo "bench-tight.sh: the $mode replay of $t did not finish" >&2; exit 1; }
            failed=$((failed + f)) later=$((later + ${l:-0}))
            # The first run's first pass: time and driver calls.
            [ -n "$wall" ] || { wall=$(val wall_s "$out"); mallocs=$(val driver_mallocs "$out"); creates=$(val vmm_creates "$out"); }
        done
        printf '%-32s %6s MiB %-9s %4s %7s %7s %9.3f %8s %8s\n' "$name" "$hi" "$mode" "$n" \
            "$failed" "$later" "$wall" "${mallocs:--}" "${creates:--}"
        if [ "$mode" = default ] && [ $((failed + later)) -gt 0 ]; then status=1; fi
    done
done
if [ $status = 0 ]; then
    echo "edge: the default configuration served every request on each plain runtime's tightest device"
else
    echo "edge: the default configuration FAILED requests the plain runtime served"
fi
exit $status
