#!/bin/sh
# Behaviour checks of the trace replay (suite "bench"); never timings.
#   check_replay.sh cache REPLAY TRACE PRELOAD   the cache makes fewer driver calls than plain
#   check_replay.sh cub REPLAY TRACE CUB_REPLAY  CUB's replay succeeds and caches too
#   check_replay.sh expandable REPLAY TRACE PRELOAD  expandable segments map pages, no
#                                                cudaMalloc, and fragment less at the peak
#   check_replay.sh bad-input REPLAY             malformed traces are refused, never a crash
#   check_replay.sh tight SCRIPT BUILDDIR TRACE PRELOAD  scripts/bench-tight.sh: on the plain
#                                                runtime's tightest device (bisection), the cache's
#                                                default configuration serves every request of
#                                                every pass, in two runs
set -u
mode=$1
replay=$2
# shellcheck source=tests/bench/check_lib.sh
. "$(dirname "$0")/check_lib.sh"

case $mode in
cache)
    trace=$3 preload=$4
    run plain env -u LD_PRELOAD "$replay" "$trace" --memset 8
    run cache env LD_PRELOAD="$preload" "$replay" "$trace" --memset 8
    [ "$(value mode "$tmp/plain.out")" = plain ] || fail "plain run sees a cache"
    [ "$(value mode "$tmp/cache.out")" = cache ] || fail "preloaded run sees no cache"
    p_allocs=$(value allocs "$tmp/plain.out")
    p_frees=$(value frees "$tmp/plain.out")
    p_mallocs=$(value driver_mallocs "$tmp/plain.out")
    p_syncs=$(value device_syncs "$tmp/plain.out")
    c_mallocs=$(value driver_mallocs "$tmp/cache.out")
    c_syncs=$(value device_syncs "$tmp/cache.out")
    [ "$(value events "$tmp/cache.out")" = "$(value events "$tmp/plain.out")" ] ||
        fail "the two runs replayed different events"
    [ "$(value skipped_frees "$tmp/plain.out")" -ge 1 ] ||
        fail "the trace's free without an allocation was not skipped"
    # Plain: every call reaches the driver and every free synchronizes the device.
    [ "$p_mallocs" -eq "$p_allocs" ] || fail "plain: $p_mallocs driver mallocs for $p_allocs allocations"
    [ "$p_syncs" -ge "$p_frees" ] || fail "plain: $p_syncs device syncs for $p_frees frees"
    [ "$c_mallocs" -lt "$p_mallocs" ] || fail "cache: $c_mallocs driver mallocs, plain $p_mallocs"
    [ "$c_syncs" -lt "$p_syncs" ] || fail "cache: $c_syncs device syncs, plain $p_syncs"
    echo "ok: driver mallocs $p_mallocs -> $c_mallocs, device syncs $p_syncs -> $c_syncs"
    ;;
expandable)
    trace=$3 preload=$4
    run segments env LD_PRELOAD="$preload" CACHEALLOC_EXPANDABLE=0 "$replay" "$trace" --memset 8
    # A page a handle throughout: the default prices its growths and, far from the edge, maps
    # requests from 4 MiB alone, which trades this figure for driver calls (docs/arena.md).
    run expandable env LD_PRELOAD="$preload" CACHEALLOC_EXPANDABLE=1 \
        CACHEALLOC_EXPANDABLE_PIECE=2M "$replay" "$trace" --memset 8
    [ "$(value driver_mallocs "$tmp/expandable.out")" = 0 ] || fail "expandable: cudaMalloc called"
    [ "$(value vmm_maps "$tmp/expandable.out")" -gt 0 ] || fail "expandable: no page mapped"
    s_frag=$(value fragmentation "$tmp/segments.out")
    x_frag=$(value fragmentation "$tmp/expandable.out")
    awk -v s="$s_frag" -v x="$x_frag" 'BEGIN { exit !(x < s) }' ||
        fail "expandable: fragmentation $x_frag, plain segments $s_frag"
    echo "ok: fragmentation at the peak $s_frag -> $x_frag"
    ;;
cub)
    trace=$3 cub=$4
    run plain env -u LD_PRELOAD "$replay" "$trace"
    run cub env -u LD_PRELOAD "$cub" "$trace"
    [ "$(value mode "$tmp/cub.out")" = cub ] || fail "not the CUB replay"
    [ "$(value events "$tmp/cub.out")" = "$(value events "$tmp/plain.out")" ] ||
        fail "the two runs replayed different events"
    p_mallocs=$(value driver_mallocs "$tmp/plain.out")
    b_mallocs=$(value driver_mallocs "$tmp/cub.out")
    [ "$b_mallocs" -lt "$p_mallocs" ] || fail "cub: $b_mallocs driver mallocs, plain $p_mallocs"
    echo "ok: driver mallocs $p_mallocs -> $b_mallocs under CUB"
    ;;
bad-input)
    h='seq,time_us,event,handle,size,stream'
    printf '' >"$tmp/empty.csv"
    printf 'a,b,c\n0,,A,0x10,64,0\n' >"$tmp/no-header.csv"
    printf '%s\n0,,A,0x10,64\n' "$h" >"$tmp/short-line.csv"
    printf '%s\n0,,A,0x10,64,0,9\n' "$h" >"$tmp/long-line.csv"
    printf '%s\n0,,A,0x10,12x,0\n' "$h" >"$tmp/bad-size.csv"
    printf '%s\n0,,A,0x10,-5,0\n' "$h" >"$tmp/negative-size.csv"
    printf '%s\n0,,A,0xzz,64,0\n' "$h" >"$tmp/bad-handle.csv"
    printf '%s\n0,,Q,0x10,64,0\n' "$h" >"$tmp/bad-event.csv"
    printf '%s\n0,,A,0x10,99999999999999999999999,0\n' "$h" >"$tmp/huge-size.csv"
    { echo "$h"; head -c 2000 /dev/zero | tr '\0' 'x'; echo; } >"$tmp/very-long.csv"
    for f in "$tmp"/*.csv "$tmp/missing.csv"; do
        "$replay" "$f" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ "$rc" -eq 2 ] || fail "$(basename "$f"): exit status $rc, expected 2"
        grep -q '^trace: ' "$tmp/err" || fail "$(basename "$f"): no error line"
        echo "ok: $(basename "$f"): $(cat "$tmp/err")"
    done
    for args in "" "--memset" "--memset x $tmp/x.csv" "a.csv b.csv"; do
        # shellcheck disable=SC2086
        "$replay" $args >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ "$rc" -eq 2 ] || fail "arguments '$args': exit status $rc, expected 2"
    done
    echo "ok: bad arguments refused"
    ;;
tight)
    script=$2 builddir=$3 trace=$4 preload=$5
    "$script" --no-build --builddir "$builddir" --preload "$preload" --room 8G --passes 3 --runs 2 "$trace" >"$tmp/tight.out" 2>"$tmp/tight.err" ||
        fail "bench-tight.sh: exit status $?: $(cat "$tmp/tight.out" "$tmp/tight.err")"
    cat "$tmp/tight.out"
    for mode in plain default; do
        row=$(awk -v m="$mode" '$4 == m' "$tmp/tight.out")
        [ -n "$row" ] || fail "no $mode row"
        set -- $row
        [ "$6" = 0 ] && [ "$7" = 0 ] || fail "$mode: $6 failed in the first pass, $7 later"
    done
    for mode in segments growth; do
        [ -n "$(awk -v m="$mode" '$4 == m' "$tmp/tight.out")" ] || fail "no $mode row"
    done
    echo "ok: every request served on the plain runtime's tightest device, plainly and by the default configuration"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
