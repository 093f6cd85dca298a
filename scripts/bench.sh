#!/usr/bin/env bash
# Benchmarks of cachealloc: the arena's hot path (ns and instructions per cache-hit pair) and
# trace replays on the simulated device (plain runtime vs the preloaded cache vs CUB's
# CachingDeviceAllocator). Prints one table of figures measured in this run, and the exact
# command line of every measurement. docs/benchmarks.md explains what each figure means.
#
#   scripts/bench.sh [--builddir DIR] [--runs N] [--pairs N] [--memset BYTES]
#                    [--no-build] [--no-callgrind] [TRACE.csv ...]
#
# Default traces: tests/bench/small_trace.csv, plus ../shared/traces/*.csv when that directory
# exists next to the repository.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
builddir=$repo/build-bench
runs=5            # best-of for the hot path
replay_runs=3     # best-of for replay wall times
pairs=1000000     # pairs per timed hot-path run (split between the threads of the 4-thread runs)
cg_pairs=100000   # callgrind: runs of cg_pairs and 2*cg_pairs pairs
memset_bytes=8
build=1
callgrind=1
traces=()

usage() {
    sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
    --builddir) builddir=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --memset) memset_bytes=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-callgrind) callgrind=0; shift ;;
    -h|--help) usage ;;
    --*) echo "bench.sh: unknown option $1" >&2; usage ;;
    *) traces+=("$1"); shift ;;
    esac
done
for n in "$runs" "$pairs" "$memset_bytes"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "bench.sh: not a number: $n" >&2; exit 2; }
done
case $builddir in /*) ;; *) builddir=$PWD/$builddir ;; esac

if [ ${#traces[@]} -eq 0 ]; then
    traces=("$repo/tests/bench/small_trace.csv")
    shared=$(cd "$repo/.." && pwd)/shared/traces
    if [ -d "$shared" ]; then
        for t in "$shared"/*.csv; do
            [ -f "$t" ] && traces+=("$t")
        done
    fi
fi

for t in "${traces[@]}"; do
    [ -f "$t" ] || { echo "bench.sh: no trace $t" >&2; exit 1; }
done

if [ "$build" = 1 ]; then
    if [ ! -f "$builddir/build.ninja" ]; then
        meson setup --buildtype=debugoptimized "$builddir" "$repo" >/dev/null
    fi
    meson compile -C "$builddir" >/dev/null
fi
buildtype=$(meson introspect --buildoptions "$builddir" 2>/dev/null |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"))' 2>/dev/null ||
    echo unknown)

hotpath=$builddir/tests/bench/bench-hotpath
replay=$builddir/tests/bench/bench-replay
replay_cub=$builddir/tests/bench/bench-replay-cub
shim=$builddir/shim/libcachealloc.so
simdev=$builddir/tests/simdevice/driver
[ -x "$hotpath" ] || { echo "bench.sh: $hotpath not built" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
commands=()

# val KEY FILE
val() { sed -n "s/^$1=//p" "$2" | head -n 1; }

# ---------------------------------------------------------------- hot path: ns per pair
declare -A ns ns_thread ins
for variant in "plain 1" "async 1" "plain 4" "async 4"; do
    read -r api threads <<<"$variant"
    per_thread=$((pairs / threads))
    cmd=("$hotpath" --api "$api" --threads "$threads" --pairs "$per_thread" --runs "$runs")
    commands+=("${cmd[*]}")
    "${cmd[@]}" >"$tmp/hot.out"
    ns[$api$threads]=$(val best_ns_per_pair "$tmp/hot.out")
    ns_thread[$api$threads]=$(val best_ns_per_pair_per_thread "$tmp/hot.out")
done

# ------------------------------------------------- hot path: instructions per pair (callgrind)
have_valgrind=0
if [ "$callgrind" = 1 ] && command -v valgrind >/dev/null; then
    have_valgrind=1
    for api in plain async; do
        total=()
        for n in "$cg_pairs" $((2 * cg_pairs)); do
            cmd=(valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out"
                 "$hotpath" --api "$api" --pairs "$n" --runs 1)
            commands+=("${cmd[*]}")
            "${cmd[@]}" >/dev/null 2>"$tmp/cg.err"
            total+=("$(sed -n 's/^summary: //p' "$tmp/cg.out")")
        done
        ins[$api]=$(( (total[1] - total[0]) / cg_pairs ))
    done
fi

# ---------------------------------------------------------------- trace replays
# Commands are built as strings, to be printed as run: paths must not contain spaces.
simmem=${SIMDEV_MEMORY:-80G}
modes=("plain" "cache" "expand")
[ -x "$replay_cub" ] && modes+=("cub" "cub-pow2")

replay_cmd() {  # mode trace
    local base="LD_LIBRARY_PATH=$simdev:${CUDA_PATH:-/usr/local/cuda}/lib64 SIMDEV_MEMORY=$simmem"
    case $1 in
    plain) echo "env -u LD_PRELOAD $base $replay $2 --memset $memset_bytes" ;;
    cache) echo "env $base LD_PRELOAD=$shim $replay $2 --memset $memset_bytes" ;;
    # The cache with expandable segments: pages mapped into one reserved range per pool.
    expand) echo "env $base CACHEALLOC_EXPANDABLE=1 LD_PRELOAD=$shim $replay $2 --memset $memset_bytes" ;;
    cub) echo "env -u LD_PRELOAD $base $replay_cub $2 --memset $memset_bytes" ;;
    # CUB with power-of-two bins from 512 B to 64 GiB and no cap: it caches everything.
    cub-pow2) echo "env -u LD_PRELOAD $base $replay_cub $2 --memset $memset_bytes --cub-bins 2,9,36" ;;
    esac
}

declare -A wall
for t in "${traces[@]}"; do
    for m in "${modes[@]}"; do
        rcmd=$(replay_cmd "$m" "$t")
        commands+=("$rcmd  (best of $replay_runs)")
        best=
        for ((r = 0; r < replay_runs; r++)); do
            out=$tmp/replay.$m.$(basename "$t").out
            # shellcheck disable=SC2086  # split on purpose: see replay_cmd
            if ! $rcmd >"$out" 2>"$tmp/replay.err"; then
                echo "bench.sh: replay failed: $rcmd" >&2
                cat "$tmp/replay.err" >&2
                exit 1
            fi
            w=$(val wall_s "$out")
            if [ -z "$best" ] || awk -v a="$w" -v b="$best" 'BEGIN { exit !(a < b) }'; then
                best=$w
            fi
        done
        wall[$m.$t]=$best
    done
done

# ------------------------------------------- a process that never uses a GPU: the preload's cost
# The dlsym and dlopen hooks are in every process that inherits LD_PRELOAD; a CPU-only Python
# that imports modules doing many lookups must not notice them. Median of alternating runs.
inert_runs=21
inert_cmd=(python3 -c 'import json, ssl, sqlite3')
commands+=("${inert_cmd[*]}  and  LD_PRELOAD=$shim ${inert_cmd[*]}  (median of $inert_runs each, alternating)")
inert_times() {  # prints "plain_ms preload_ms"
    local i
    for ((i = 0; i < inert_runs; i++)); do
        for pre in "" "$shim"; do
            local t0 t1
            t0=$(date +%s%N)
            LD_PRELOAD=$pre "${inert_cmd[@]}"
            t1=$(date +%s%N)
            echo "${pre:+p} $(( (t1 - t0) / 1000 ))"
        done
    done | awk '{ if ($1 == "p") p[np++] = $2; else q[nq++] = $1 }
        function med(a, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
            if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return a[int(n / 2)] }
        END { printf "%.2f %.2f\n", med(q, nq) / 1000, med(p, np) / 1000 }'
}
read -r inert_plain inert_preload < <(inert_times)

# ---------------------------------------------------------------- report
echo "cachealloc benchmarks  ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, buildtype=$buildtype)"
echo
echo "Hot path: in-process arena over a device that costs nothing, 4096-byte blocks,"
echo "best of $runs runs of $pairs pairs (4 threads: $((pairs / 4)) pairs each)."
printf '  %-28s %12s %18s %14s\n' "variant" "ns/pair" "ns/pair/thread" "instr/pair"
for v in "plain 1" "async 1" "plain 4" "async 4"; do
    read -r api threads <<<"$v"
    i=-
    [ "$threads" = 1 ] && [ "$have_valgrind" = 1 ] && i=${ins[$api]}
    label="$api API, $threads thread"; [ "$threads" != 1 ] && label+=s
    printf '  %-28s %12s %18s %14s\n' "$label" "${ns[$api$threads]}" \
        "${ns_thread[$api$threads]}" "$i"
done
echo "  target (issue): a cache-hit pair <= 100 ns and <= 300 instructions"
[ "$have_valgrind" = 1 ] ||
    echo "  (instructions not measured: valgrind not found or --no-callgrind)"
echo

for t in "${traces[@]}"; do
    plain_out=$tmp/replay.plain.$(basename "$t").out
    echo "Replay of $(basename "$t"): $(val events "$plain_out") events," \
         "peak live $(val peak_live_bytes "$plain_out") B, memset $memset_bytes B after each allocation," \
         "SIMDEV_MEMORY=$simmem, wall best of $replay_runs"
    printf '  %-9s %10s %10s %10s %10s %10s %10s %10s %16s %8s\n' mode wall_s "vs plain" \
        "vs cub" mallocs frees syncs pages peak_reserved frag
    for m in "${modes[@]}"; do
        out=$tmp/replay.$m.$(basename "$t").out
        w=${wall[$m.$t]}
        sp=$(awk -v p="${wall[plain.$t]}" -v w="$w" 'BEGIN { printf "%.1fx", p / w }')
        vc=-
        [ -n "${wall[cub.$t]:-}" ] && vc=$(awk -v c="${wall[cub.$t]}" -v w="$w" 'BEGIN { printf "%.1fx", c / w }')
        printf '  %-9s %10s %10s %10s %10s %10s %10s %10s %16s %8s\n' "$m" "$w" "$sp" "$vc" \
            "$(val driver_mallocs "$out")" "$(val driver_frees "$out")" \
            "$(val device_syncs "$out")" "$(val vmm_creates "$out")" \
            "$(val peak_reserved_bytes "$out")" "$(val fragmentation "$out")"
    done
    echo
done
echo "  vs plain / vs cub: speed-up of the row's wall time (higher is faster); mallocs, frees,"
echo "  syncs: the simulated driver's cudaMalloc and cudaFree calls and device synchronizations"
echo "  during the replay; pages: 2 MiB pages created (cuMemCreate), each also mapped and released"
echo "  (expandable segments); frag = 1 - peak live / peak reserved."
echo
echo "A process that never uses a GPU ($inert_runs runs each, median wall time):"
echo "  ${inert_cmd[*]}: ${inert_plain} ms plain, ${inert_preload} ms with LD_PRELOAD=libcachealloc.so"
echo
echo "Commands:"
for c in "${commands[@]}"; do
    echo "  $c"
done
