#!/bin/sh
# check_pinned.sh BENCH_PINNED fixed|random: the pinned loop under the cache (LD_PRELOAD set by
# the test) makes no pinned driver allocation after its warm-up; behaviour, never timings.
out=$("$1" --loop "$2" --pairs 200) || { echo "bench-pinned failed"; exit 1; }
printf '%s\n' "$out"
after=$(printf '%s\n' "$out" | sed -n 's/^driver_host_allocs_after_warmup=//p')
[ -n "$after" ] || { echo "no count: not on the simulated driver"; exit 77; }
[ "$after" = 0 ] || { echo "$after pinned driver allocations after the warm-up"; exit 1; }
echo "ok: no pinned driver allocation after the warm-up"
