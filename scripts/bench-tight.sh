#!/usr/bin/env bash
# Do no harm near the device's capacity: every trace replayed on a simulated device just large
# enough for its live peak plus a margin, several passes in one process, plainly (NVIDIA's
# runtime alone), under the cache's default configuration (CUDA: expandable segments) and with
# plain segments. Every
# request the plain runtime serves must be served. Prints, per trace and mode, the failed
# allocations of the first pass and of the later ones, and how close the cache came: the
# allocations its out-of-memory ladder rescued after the device said no, and the mappings it
# unmapped to do so. docs/benchmarks.md, "Near the capacity", reads the figures.
#
#   scripts/bench-tight.sh [--builddir DIR] [--margin PERCENT] [--passes N] [--no-build]
#                          [--preload LIST] [--room SIZE] [TRACE.csv ...]
#
# --preload: what LD_PRELOAD holds for the cache's runs (default: the build's shim; a
# sanitizer build's test puts its runtime first). --room: the simulated device on which the live
# peak is first measured (default 80G, room for the recorded traces; a thread-sanitized process
# cannot reserve much more address space than that).
#
# Default traces: ../shared/traces/*.csv next to the repository, else tests/bench/small_trace.csv.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
builddir=$repo/build-bench
margin=2
passes=10
build=1
preload=
room=80G
traces=()

usage() {
    sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --margin) margin=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --preload) preload=$2; shift 2 ;;
    --room) room=$2; shift 2 ;;
    -h|--help) usage ;;
    --*) echo "bench-tight.sh: unknown option $1" >&2; usage ;;
    *) traces+=("$1"); shift ;;
    esac
done
[[ $margin =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "bench-tight.sh: not a percentage: $margin" >&2; exit 2; }
[[ $passes =~ ^[1-9][0-9]*$ ]] || { echo "bench-tight.sh: not a pass count: $passes" >&2; exit 2; }
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

printf '%-34s %10s %-10s %8s %8s %10s %9s\n' trace "device MiB" mode "failed" "later" "rescued" "unmapped"
for t in "${traces[@]}"; do
    # The live peak, from one plain pass on a device with room to spare.
    out=$("${base[@]}" "SIMDEV_MEMORY=$room" "$replay" "$t" --memset 8) || {
        echo "bench-tight.sh: the plain replay of $t on a device of $room failed" >&2
        exit 1
    }
    peak=$(val peak_live_bytes "$out")
    mib=$(python3 -c "import math; print(math.ceil($peak * (1 + $margin / 100) / 2**20))")
    # default: the configuration a user gets (CUDA: expandable segments); segments: plain
    # segments (CACHEALLOC_EXPANDABLE=0, the default before).
    for mode in plain default segments; do
        case $mode in
        plain) cmd=("${base[@]}") ;;
        default) cmd=("${base[@]}" CACHEALLOC_EXPANDABLE=auto "LD_PRELOAD=$preload") ;;
        segments) cmd=("${base[@]}" CACHEALLOC_EXPANDABLE=0 "LD_PRELOAD=$preload") ;;
        esac
        cmd+=("SIMDEV_MEMORY=${mib}M" "$replay" "$t" --memset 8 --passes "$passes")
        echo "# ${cmd[*]}" >&2
        out=$("${cmd[@]}" 2>/dev/null || true)
        failed=$(val alloc_failures "$out") later=$(val later_failures "$out")
        rescued=$(val cache_oom_recoveries "$out") unmapped=$(val vmm_unmaps "$out")
        [ -n "$failed" ] || { echo "bench-tight.sh: the $mode replay of $t did not finish" >&2; exit 1; }
        printf '%-34s %10s %-10s %8s %8s %10s %9s\n' "$(basename "$t")" "$mib" "$mode" \
            "$failed" "${later:--}" "${rescued:--}" "${unmapped:--}"
    done
done
