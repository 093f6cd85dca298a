#!/bin/sh
# Behaviour checks of bench-loop (suite "bench"); never timings.
#   check_loop.sh LOOP PRELOAD
# Beside a busy stream, the plain runtime makes a driver call per allocation, the reference
# cache synchronizes the device instead, and the preloaded cache stays within twice the working
# set plus one segment with no driver allocation after the warm-up, under every fence policy:
# the default (auto) learns which of the two below costs less, CACHEALLOC_FENCES=device records
# no event and synchronizes the device, CACHEALLOC_FENCES=events records fences.
set -u
loop=$1
preload=$2
# shellcheck source=tests/bench/check_lib.sh
. "$(dirname "$0")/check_lib.sh"

args="--busy 1 --warmup 200"
# shellcheck disable=SC2086  # split on purpose
run plain env -u LD_PRELOAD "$loop" $args --pairs 200
# shellcheck disable=SC2086
run sync env -u LD_PRELOAD "$loop" $args --pairs 2000 --sync-cache
# shellcheck disable=SC2086
run cache env -u CACHEALLOC_FENCES LD_PRELOAD="$preload" "$loop" $args --pairs 2000
# shellcheck disable=SC2086
run learn env -u CACHEALLOC_FENCES LD_PRELOAD="$preload" "$loop" --busy 1 --warmup 0 --pairs 600
# shellcheck disable=SC2086
run device env CACHEALLOC_FENCES=device LD_PRELOAD="$preload" "$loop" $args --pairs 2000
# shellcheck disable=SC2086
run events env CACHEALLOC_FENCES=events LD_PRELOAD="$preload" "$loop" $args --pairs 2000
# The default on each price profile of the simulated driver (docs/simdevice.md): whichever way
# it learns there, the memory bound holds.
for p in gpu sync-dear events-dear; do
    # shellcheck disable=SC2086
    run "cache-$p" env -u CACHEALLOC_FENCES SIMDEV_PROFILE="$p" LD_PRELOAD="$preload" "$loop" \
        $args --pairs 1000
done
[ "$(value mode "$tmp/plain.out")" = plain ] || fail "plain run sees a cache"
[ "$(value mode "$tmp/cache.out")" = cache ] || fail "preloaded run sees no cache"
[ "$(value driver_mallocs "$tmp/plain.out")" -eq 200 ] || fail "plain: not a driver call per pair"
[ "$(value driver_mallocs "$tmp/sync.out")" -eq 0 ] || fail "sync: driver calls after warm-up"
[ "$(value device_syncs "$tmp/sync.out")" -ge 1000 ] || fail "sync: does not synchronize"
for m in cache device events cache-gpu cache-sync-dear cache-events-dear; do
    [ "$(value driver_mallocs "$tmp/$m.out")" -eq 0 ] || fail "$m: driver calls after warm-up"
    live=$(value peak_live_bytes "$tmp/$m.out")
    reserved=$(value peak_reserved_bytes "$tmp/$m.out")
    [ "$reserved" -le $((2 * live + 2 * 1048576)) ] ||
        fail "$m: $reserved bytes reserved for $live live"
done
[ "$(value events_recorded_per_10k "$tmp/device.out")" = 0.00 ] ||
    fail "device: fences recorded under the device policy"
[ "$(value device_syncs "$tmp/device.out")" -ge 1 ] || fail "device: never synchronizes"
# The learned policy measures both ways as it starts, whichever then wins: from the first pair
# (no warm-up, so that the counters see it) it synchronizes, then tries fences.
[ "$(value device_syncs "$tmp/learn.out")" -ge 1 ] || fail "learn: never synchronizes"
[ "$(value events_recorded_per_10k "$tmp/learn.out")" != 0.00 ] ||
    fail "learn: the learned policy never tried fences"
[ "$(value events_recorded_per_10k "$tmp/events.out")" != 0.00 ] ||
    fail "events: no fence recorded"
echo "ok"
