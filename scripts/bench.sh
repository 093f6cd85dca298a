#!/usr/bin/env bash
# Benchmarks of cachealloc: the arena's hot path (ns and instructions per cache-hit pair),
# trace replays on the simulated device (plain runtime vs the preloaded cache vs CUB's
# CachingDeviceAllocator), and loops of cudaMalloc/cudaFree beside idle and busy streams (plain
# runtime vs the cache vs a cache that synchronizes the device before reuse). Prints tables of
# figures measured in this run, and the exact command line of every measurement.
# docs/benchmarks.md explains what each figure means.
#
#   scripts/bench.sh [--builddir DIR] [--runs N] [--pairs N] [--memset BYTES]
#                    [--no-build] [--no-callgrind] [--loops-only] [--pairs-only] [--loop-pairs N]
#                    [--loop-runs N] [--pinned-only] [TRACE.csv ...]
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
loops_only=0
pairs_only=0
pinned_only=0
loop_pairs=20000  # timed pairs per loop variant of the caches (the plain runtime: a tenth)
loop_runs=3       # best-of for the loops
traces=()

usage() {
    sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
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
    --loops-only) loops_only=1; shift ;;
    --pairs-only) pairs_only=1; shift ;;
    --pinned-only) pinned_only=1; shift ;;
    --loop-pairs) loop_pairs=$2; shift 2 ;;
    --loop-runs) loop_runs=$2; shift 2 ;;
    -h|--help) usage ;;
    --*) echo "bench.sh: unknown option $1" >&2; usage ;;
    *) traces+=("$1"); shift ;;
    esac
done
for n in "$runs" "$pairs" "$memset_bytes" "$loop_pairs" "$loop_runs"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "bench.sh: not a number: $n" >&2; exit 2; }
done
if [ "$loop_pairs" -lt 10 ] || [ "$loop_runs" -lt 1 ]; then
    echo "bench.sh: --loop-pairs needs at least 10, --loop-runs at least 1" >&2
    exit 2
fi
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

# ------------------------------------------------- loops of cudaMalloc/cudaFree beside streams
# One size (1 MiB) and random sizes (1 to 8 MiB), 1 to 8 threads, two non-blocking streams
# that stay idle or of which one is kept busy with host functions of 20 us, two queued at a
# time. Modes: plain runtime, the reference cache that synchronizes the device before reuse
# (bench-loop --sync-cache), the preloaded cache, and the preloaded cache whose frees
# synchronize the device as the runtime's do (c-sync: CACHEALLOC_REUSE=sync, HIP's default).
# Printed by loop_section.
loop=$builddir/tests/bench/bench-loop
loop_memory=${SIMDEV_MEMORY:-8G}

loop_cmd() {  # mode sizes threads streams
    local base="LD_LIBRARY_PATH=$simdev:${CUDA_PATH:-/usr/local/cuda}/lib64 SIMDEV_MEMORY=$loop_memory"
    local busy=0 n=$loop_pairs warm=1000
    [ "$4" = busy ] && busy=1
    # The plain runtime pays a driver call per allocation: a tenth of the pairs says as much.
    [ "$1" = plain ] && n=$((loop_pairs / 10)) warm=100
    local args="--sizes $2 --threads $3 --streams 2 --busy $busy --pairs $n --warmup $warm"
    case $1 in
    plain) echo "env -u LD_PRELOAD $base $loop $args" ;;
    sync) echo "env -u LD_PRELOAD $base $loop $args --sync-cache" ;;
    cache) echo "env $base LD_PRELOAD=$shim $loop $args" ;;
    c-sync) echo "env $base CACHEALLOC_REUSE=sync LD_PRELOAD=$shim $loop $args" ;;
    esac
}

loop_section() {
    if [ ! -x "$loop" ]; then
        echo "Loops: $loop not built (CUDA toolkit not found)"
        return
    fi
    local sizes threads streams m r cmd out best pps
    for sizes in fixed random; do
        for streams in idle busy; do
            for threads in 1 2 4 8; do
                for m in plain sync cache c-sync; do
                    cmd=$(loop_cmd "$m" "$sizes" "$threads" "$streams")
                    commands+=("$cmd  (best of $loop_runs)")
                    best=
                    for ((r = 0; r < loop_runs; r++)); do
                        out=$tmp/loop.run
                        # shellcheck disable=SC2086  # split on purpose: see loop_cmd
                        if ! $cmd >"$out" 2>"$tmp/loop.err"; then
                            echo "bench.sh: loop failed: $cmd" >&2
                            cat "$tmp/loop.err" >&2
                            exit 1
                        fi
                        pps=$(val pairs_per_s "$out")
                        if [ -z "$best" ] || [ "$pps" -gt "$best" ]; then
                            best=$pps
                            cp "$out" "$tmp/loop.$m.$sizes.$threads.$streams"
                        fi
                    done
                done
            done
        done
    done
    echo "Loops of cudaMalloc/cudaFree beside 2 non-blocking streams (busy: one kept running host"
    echo "functions of 20 us, 2 queued), 8-byte memset after each allocation; caches: $loop_pairs"
    echo "timed pairs after 1000 warm-up pairs per thread, plain: a tenth; best of $loop_runs."
    local seg o p s c mib W R bound
    for sizes in fixed random; do
        seg=$((2 << 20)) mib=1
        [ "$sizes" = random ] && seg=$((20 << 20)) mib=1-8
        for streams in idle busy; do
            echo "  $mib MiB, $streams streams"
            printf '    %-3s %-6s %10s %8s %8s %10s %10s %10s %10s %9s  %s\n' thr mode pairs/s \
                "x plain" "x sync" "live MiB" "res MiB" "bound MiB" mallocs/10k syncs/10k targets
            for threads in 1 2 4 8; do
                p=$tmp/loop.plain.$sizes.$threads.$streams
                s=$tmp/loop.sync.$sizes.$threads.$streams
                c=$tmp/loop.cache.$sizes.$threads.$streams
                for m in plain sync cache c-sync; do
                    o=$tmp/loop.$m.$sizes.$threads.$streams
                    W=$(val peak_live_bytes "$o")
                    R=$(val peak_reserved_bytes "$o")
                    bound=$((2 * W + seg))
                    awk -v t="$threads" -v m="$m" -v pps="$(val pairs_per_s "$o")" \
                        -v pp="$(val pairs_per_s "$p")" -v ps="$(val pairs_per_s "$s")" \
                        -v pc="$(val pairs_per_s "$c")" \
                        -v W="$W" -v R="$R" -v B="$bound" \
                        -v ma="$(val driver_mallocs_per_10k "$o")" \
                        -v sy="$(val device_syncs_per_10k "$o")" 'BEGIN {
                        ok = ""
                        if (m == "cache")
                            ok = sprintf("reserved %s, mallocs %s, 10x plain %s, >= sync %s",
                                R <= B ? "ok" : "OVER", ma <= 1 ? "ok" : "OVER",
                                pps >= 10 * pp ? "ok" : "no", pps >= ps ? "ok" : "no")
                        if (m == "c-sync")
                            ok = sprintf("%.2fx cache, mallocs %s", pps / pc,
                                ma <= 1 ? "ok" : "OVER")
                        printf "    %-3s %-6s %10d %7.1fx %7.2fx %10.1f %10.1f %10.1f %10.2f %9.1f  %s\n",
                            t, m, pps, pps / pp, pps / ps, W / 1048576, R / 1048576,
                            B / 1048576, ma, sy, ok }'
                done
            done
        done
    done
    echo "  live: largest live working set (sum of requested sizes); res: the driver's peak reserved"
    echo "  bytes; bound: 2 x live + one segment (2 MiB, or 20 MiB for 1-8 MiB); mallocs and syncs:"
    echo "  the driver's allocations and device synchronizations during the timed pairs, per 10,000."
    echo "  c-sync: the cache under CACHEALLOC_REUSE=sync, each free synchronizing the device as the"
    echo "  runtime's free does (HIP's default); x cache: its pairs/s over the cache's (safe)."
    echo
}

# ------------------------------------------------------------ loops of pinned host memory
# bench-pinned: 64 MiB allocations and frees, and 1 to 8 MiB ones with an asynchronous copy from
# each buffer before its free; plainly and under the cache, in this run.
pinned_section() {
    local bin=$builddir/tests/bench/bench-pinned
    local base="LD_LIBRARY_PATH=$simdev:${CUDA_PATH:-/usr/local/cuda}/lib64 SIMDEV_MEMORY=${SIMDEV_MEMORY:-8G} CACHEALLOC_STATS=0"
    echo "Pinned host memory (cudaHostAlloc/cudaFreeHost, pairs per second; driver pinnings in all"
    echo "and after the first 10% of the pairs):"
    printf '  %-7s %6s %14s %14s %8s %14s\n' loop pairs plain cache "x" "cache pinnings"
    local loop pairs mode out
    for loop in fixed random; do
        [ "$loop" = fixed ] && pairs=100 || pairs=2000
        for mode in plain cache; do
            local cmd="env -u LD_PRELOAD $base $bin --loop $loop --pairs $pairs"
            [ "$mode" = cache ] && cmd="env $base LD_PRELOAD=$shim $bin --loop $loop --pairs $pairs"
            commands+=("$cmd")
            out=$tmp/pinned.$loop.$mode
            eval "$cmd" >"$out"
        done
        local p c
        p=$(val pairs_per_s "$tmp/pinned.$loop.plain")
        c=$(val pairs_per_s "$tmp/pinned.$loop.cache")
        printf '  %-7s %6s %14s %14s %8s %14s\n' "$loop" "$pairs" "$p" "$c" \
            "$(python3 -c "print('%.0f' % ($c / $p))")" \
            "$(val driver_host_allocs "$tmp/pinned.$loop.cache")/$(val driver_host_allocs_after_warmup "$tmp/pinned.$loop.cache")"
    done
    echo
}

if [ "$pinned_only" = 1 ]; then
    pinned_section
    echo "Commands:"
    for c in "${commands[@]}"; do
        echo "  $c"
    done
    exit 0
fi

if [ "$loops_only" = 1 ]; then
    loop_section
    echo "Commands:"
    for c in "${commands[@]}"; do
        echo "  $c"
    done
    exit 0
fi

# ---------------------------------------------------------------- hot path: ns per pair
declare -A ns ns_thread ins
[ "$pairs_only" = 1 ] && hot_variants=() || hot_variants=("plain 1" "async 1" "plain 4" "async 4")
for variant in "${hot_variants[@]}"; do
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
        [ "$pairs_only" = 1 ] && break
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

# ------------------------------------------ the pair through the shim: instructions and threads
# Cache-hit pairs of 1 MiB through NVIDIA's runtime (static, shared) or the driver API, the
# shim and the arena, on the simulated driver. Callgrind with N and 2N pairs: per pair in total
# and inside libcachealloc.so alone (callgrind_objects.py sums its functions' own cost).
pairs_dir=$builddir/tests/bench
cgobj="python3 $repo/tests/bench/callgrind_objects.py"
pair_vars=("LD_LIBRARY_PATH=$simdev:${CUDA_PATH:-/usr/local/cuda}/lib64" CACHEALLOC_STATS=0)
shim_env=(env "${pair_vars[@]}")
declare -A pair_total pair_shim pair_rate pair_worst pair_fail
through_shim=0
if [ -x "$pairs_dir/bench-pairs-static" ]; then
    through_shim=1
    if [ "$have_valgrind" = 1 ]; then
        for kind in static shared driver; do
            for api in plain async; do
                t=() o=()
                for n in 20000 40000; do
                    cmd=("${shim_env[@]}" LD_PRELOAD="$shim" valgrind --tool=callgrind
                         --callgrind-out-file="$tmp/pairs.cg" "$pairs_dir/bench-pairs-$kind"
                         --api "$api" --pairs "$n")
                    commands+=("${cmd[*]}")
                    "${cmd[@]}" >/dev/null 2>"$tmp/pairs.err"
                    t+=("$($cgobj "$tmp/pairs.cg" --total)")
                    o+=("$($cgobj "$tmp/pairs.cg" --object libcachealloc)")
                done
                pair_total[$kind.$api]=$(( (t[1] - t[0]) / 20000 ))
                pair_shim[$kind.$api]=$(( (o[1] - o[0]) / 20000 ))
            done
        done
        # The same loops through CUB's CachingDeviceAllocator (no shim): its total per pair.
        if [ -x "$pairs_dir/bench-pairs-cub" ]; then
            for api in plain async; do
                t=()
                for n in 20000 40000; do
                    cmd=(env -u LD_PRELOAD "${pair_vars[@]}" valgrind --tool=callgrind
                         --callgrind-out-file="$tmp/pairs.cg" "$pairs_dir/bench-pairs-cub"
                         --api "$api" --pairs "$n")
                    commands+=("${cmd[*]}")
                    "${cmd[@]}" >/dev/null 2>"$tmp/pairs.err"
                    t+=("$($cgobj "$tmp/pairs.cg" --total)")
                done
                pair_total[cub.$api]=$(( (t[1] - t[0]) / 20000 ))
            done
        fi
        # Does a thread add work to another's pairs? The static build's instructions per pair
        # with 1, 2, 4 and 8 threads (40,000 and 80,000 pairs in all): flat when nothing is
        # shared, whatever the timings below say on 2 CPUs.
        for api in plain async; do
            for threads in 1 2 4 8; do
                t=()
                for n in 40000 80000; do
                    cmd=("${shim_env[@]}" LD_PRELOAD="$shim" valgrind --tool=callgrind
                         --callgrind-out-file="$tmp/pairs.cg" "$pairs_dir/bench-pairs-static"
                         --api "$api" --threads "$threads" --pairs $((n / threads)))
                    commands+=("${cmd[*]}")
                    "${cmd[@]}" >/dev/null 2>"$tmp/pairs.err"
                    t+=("$($cgobj "$tmp/pairs.cg" --total)")
                done
                pair_total[thr.$api.$threads]=$(( (t[1] - t[0]) / 40000 ))
            done
        done
    fi
    # Pairs per second: the static build through the shim with 1..8 threads, best of 5 (one
    # bad moment of a shared CPU moves a single run by half, and 2, 4 and 8 threads on 2 CPUs
    # differ by less than a run's noise), the driver-API build (the same library with no
    # NVIDIA runtime in between) and CUB's CachingDeviceAllocator without the shim, for the
    # ratio. The five rounds are interleaved: each round runs every thread count once, so
    # that a slow stretch of the shared machine falls on all of them rather than on one.
    pair_cmd() {  # who api threads -> the command in the array pc
        local total=40000000
        case $1 in
        cache) pc=("${shim_env[@]}" LD_PRELOAD="$shim" "$pairs_dir/bench-pairs-static") ;;
        driver) pc=("${shim_env[@]}" LD_PRELOAD="$shim" "$pairs_dir/bench-pairs-driver") ;;
        # CUB's runs, twenty times slower, get a twentieth of the pairs.
        cub) pc=(env -u LD_PRELOAD "${pair_vars[@]}" "$pairs_dir/bench-pairs-cub") total=2000000 ;;
        esac
        # A run lasts about a second: with a tenth of that, how the scheduler split 4 or 8
        # threads over 2 CPUs at its end decided the figure.
        pc+=(--api "$2" --threads "$3" --pairs $((total / $3)))
    }
    whos=(cache driver)
    [ -x "$pairs_dir/bench-pairs-cub" ] && whos+=(cub)
    for api in plain async; do
        for threads in 1 2 4 8; do
            for who in "${whos[@]}"; do
                pair_cmd "$who" "$api" "$threads"
                commands+=("${pc[*]}  (best of 5, rounds interleaved)")
                pair_rate[$who.$api.$threads]=0
                pair_worst[$who.$api.$threads]=0
                pair_fail[$who.$api.$threads]=0
            done
        done
    done
    for _ in 1 2 3 4 5; do
        for api in plain async; do
            for threads in 1 2 4 8; do
                for who in "${whos[@]}"; do
                    pair_cmd "$who" "$api" "$threads"
                    # CUB fails some calls with 8 threads: it records a block's event after
                    # giving its mutex back, and another thread may have destroyed it.
                    "${pc[@]}" >"$tmp/pairs.out" || [ "$who" = cub ]
                    f=$(val failures "$tmp/pairs.out")
                    pair_fail[$who.$api.$threads]=$((pair_fail[$who.$api.$threads] + ${f:-1}))
                    r=$(val pairs_per_s "$tmp/pairs.out")
                    pair_rate[$who.$api.$threads]=$(awk -v a="${pair_rate[$who.$api.$threads]}" \
                        -v b="$r" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
                    pair_worst[$who.$api.$threads]=$(awk -v a="${pair_worst[$who.$api.$threads]}" \
                        -v b="$r" 'BEGIN { print (a == 0 || b + 0 < a + 0) ? b : a }')
                done
            done
        done
    done
    for api in plain async; do
        cmd=(env -u LD_PRELOAD "${pair_vars[@]}" "$pairs_dir/bench-pairs-static" --api "$api" --pairs 2000)
        commands+=("${cmd[*]}")
        "${cmd[@]}" >"$tmp/pairs.out"
        pair_rate[$api.plainrt]=$(val pairs_per_s "$tmp/pairs.out")
    done
fi

pairs_report() {
[ "$through_shim" = 1 ] || return 0
    echo "The pair through the shim: cache hits of 1 MiB, NVIDIA's runtime (or the driver API),"
    echo "the shim and the arena, on the simulated driver. Instructions per pair (callgrind, 20,000"
    echo "and 40,000 pairs), in total and inside libcachealloc.so; targets: 150 plain, 200 async."
    echo "CUB's CachingDeviceAllocator runs the static build's loops without the shim; x static:"
    echo "its total over the static build's under the cache. (The plain runtime's pairs reach the"
    echo "simulated driver, whose cost model spins for time: counted in pairs per second below.)"
    printf '  %-27s %10s %18s %9s\n' "build, API" "total/pair" "libcachealloc/pair" "x static"
    for kind in static shared driver; do
        for api in plain async; do
            printf '  %-27s %10s %18s %9s\n' "$kind, $api" "${pair_total[$kind.$api]:--}" \
                "${pair_shim[$kind.$api]:--}" "-"
        done
    done
    for api in plain async; do
        [ -n "${pair_total[cub.$api]:-}" ] || continue
        printf '  %-27s %10s %18s %9s\n' "CUB (no shim), $api" "${pair_total[cub.$api]}" "-" \
            "$(awk -v a="${pair_total[cub.$api]}" -v b="${pair_total[static.$api]:-0}" \
               'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }')"
    done
    if [ -n "${pair_total[thr.plain.1]:-}" ]; then
        echo "Instructions per pair in total by thread count, static build (40,000 and 80,000 pairs"
        echo "in all): what one thread's pairs cost the others, whatever the timings on 2 CPUs."
        for api in plain async; do
            line="  $api:"
            for threads in 1 2 4 8; do
                line+=" $threads thr ${pair_total[thr.$api.$threads]}"
            done
            echo "$line"
        done
    fi
    echo "Pairs per second, static build through the shim (each thread on its own non-blocking"
    echo "stream for the async API, the default stream for the plain one); ratio to one thread;"
    echo "the same through the driver-API build (the library with no NVIDIA runtime in between);"
    echo "the plain runtime without the shim, one thread, and CUB's CachingDeviceAllocator without"
    echo "the shim (cache: the cache's pairs per second over CUB's), for comparison."
    for api in plain async; do
        one=${pair_rate[cache.$api.1]}
        line="  $api:"
        for threads in 1 2 4 8; do
            r=${pair_rate[cache.$api.$threads]}
            line+=" $threads thr $r/s ($(awk -v r="$r" -v o="$one" 'BEGIN { printf "%.2fx", r / o }'))"
        done
        echo "$line; plain runtime ${pair_rate[$api.plainrt]}/s" \
            "($(awk -v r="$one" -v p="${pair_rate[$api.plainrt]}" 'BEGIN { printf "%.0fx", r / p }') faster under the cache)"
        line="  $api, driver-API build:"
        for threads in 1 2 4 8; do
            r=${pair_rate[driver.$api.$threads]}
            line+=" $threads thr $r/s ($(awk -v r="$r" -v o="${pair_rate[driver.$api.1]}" 'BEGIN { printf "%.2fx", r / o }'))"
        done
        echo "$line"
        line="  $api, worst of the 5 rounds over the best (static / driver-API):"
        for threads in 1 2 4 8; do
            line+=" $threads thr $(awk -v w="${pair_worst[cache.$api.$threads]}" \
                -v b="${pair_rate[cache.$api.$threads]}" -v dw="${pair_worst[driver.$api.$threads]}" \
                -v db="${pair_rate[driver.$api.$threads]}" 'BEGIN { printf "%.2f/%.2f", w / b, dw / db }')"
        done
        echo "$line"
        if [ -n "${pair_rate[cub.$api.1]:-}" ]; then
            line="  $api, CUB:"
            for threads in 1 2 4 8; do
                r=${pair_rate[cub.$api.$threads]}
                line+=" $threads thr $r/s (cache $(awk -v c="${pair_rate[cache.$api.$threads]}" -v r="$r" 'BEGIN { printf "%.2fx", c / r }')"
                [ "${pair_fail[cub.$api.$threads]}" = 0 ] || line+=", ${pair_fail[cub.$api.$threads]} calls failed"
                line+=")"
            done
            echo "$line"
        fi
    done
    echo
}

if [ "$pairs_only" = 1 ]; then
    pairs_report
    echo "Commands:"
    for c in "${commands[@]}"; do
        echo "  $c"
    done
    exit 0
fi

# ---------------------------------------------------------------- trace replays
# Commands are built as strings, to be printed as run: paths must not contain spaces.
simmem=${SIMDEV_MEMORY:-80G}
modes=("plain" "cache" "expand")
[ -x "$replay_cub" ] && modes+=("cub" "cub-pow2")

# Every replay runs the trace $passes times in one process: the first pass's figures, then
# what the warm allocator still asks of the driver in passes 2 and later, and 3 and later.
passes=5
replay_cmd() {  # mode trace
    local base="LD_LIBRARY_PATH=$simdev:${CUDA_PATH:-/usr/local/cuda}/lib64 SIMDEV_MEMORY=$simmem"
    local args="$2 --memset $memset_bytes --passes $passes"
    case $1 in
    plain) echo "env -u LD_PRELOAD $base $replay $args" ;;
    # The cache with plain segments (CUDA's default is expandable segments: "expand").
    cache) echo "env $base CACHEALLOC_EXPANDABLE=0 LD_PRELOAD=$shim $replay $args" ;;
    # The cache with expandable segments: pages mapped into one reserved range per pool.
    expand) echo "env $base CACHEALLOC_EXPANDABLE=1 LD_PRELOAD=$shim $replay $args" ;;
    cub) echo "env -u LD_PRELOAD $base $replay_cub $args" ;;
    # CUB with power-of-two bins from 512 B to 64 GiB and no cap: it caches everything.
    cub-pow2) echo "env -u LD_PRELOAD $base $replay_cub $args --cub-bins 2,9,36" ;;
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
         "SIMDEV_MEMORY=$simmem, $passes passes, wall of the first pass, best of $replay_runs"
    printf '  %-9s %10s %10s %10s %10s %10s %10s %10s %16s %8s %14s %14s\n' mode wall_s "vs plain" \
        "vs cub" mallocs frees syncs pages peak_reserved frag "after pass 1" "after pass 2"
    for m in "${modes[@]}"; do
        out=$tmp/replay.$m.$(basename "$t").out
        w=${wall[$m.$t]}
        sp=$(awk -v p="${wall[plain.$t]}" -v w="$w" 'BEGIN { printf "%.1fx", p / w }')
        vc=-
        [ -n "${wall[cub.$t]:-}" ] && vc=$(awk -v c="${wall[cub.$t]}" -v w="$w" 'BEGIN { printf "%.1fx", c / w }')
        later() {  # prefix: driver calls (allocations, frees, maps, unmaps) / device syncs
            local n=0 k
            for k in driver_mallocs driver_frees maps unmaps; do
                n=$((n + $(val "$1_$k" "$out")))
            done
            echo "$n/$(val "$1_device_syncs" "$out")"
        }
        printf '  %-9s %10s %10s %10s %10s %10s %10s %10s %16s %8s %14s %14s\n' "$m" "$w" "$sp" "$vc" \
            "$(val driver_mallocs "$out")" "$(val driver_frees "$out")" \
            "$(val device_syncs "$out")" "$(val vmm_creates "$out")" \
            "$(val peak_reserved_bytes "$out")" "$(val fragmentation_all_passes "$out")" \
            "$(later after_pass1)" "$(later after_pass2)"
    done
    echo
done
echo "  vs plain / vs cub: speed-up of the row's wall time (higher is faster); mallocs, frees,"
echo "  syncs: the simulated driver's cudaMalloc and cudaFree calls and device synchronizations"
echo "  during the replay; pages: 2 MiB pages created (cuMemCreate), each also mapped and released"
echo "  (expandable segments); frag = 1 - peak live / peak reserved over every pass; after pass"
echo "  1, 2: driver calls (allocations + frees + maps + unmaps) / device syncs in the later passes."
echo
pairs_report
loop_section
pinned_section

echo "A process that never uses a GPU ($inert_runs runs each, median wall time):"
echo "  ${inert_cmd[*]}: ${inert_plain} ms plain, ${inert_preload} ms with LD_PRELOAD=libcachealloc.so"
echo
echo "Commands:"
for c in "${commands[@]}"; do
    echo "  $c"
done
