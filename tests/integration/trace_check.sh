#!/bin/sh
# trace_check.sh PLOT PROGRAM [REPLAY]: run PROGRAM (tests/integration/report.c) with
# CACHEALLOC_TRACE, check the timeline it wrote (three allocations of the requested sizes, one
# free, a segment taken; two pinned allocations, one freed, two blocks pinned), render it with the plotting script, and, given the benchmarks' replay
# tool, replay it: the format is the one recorded traces use.
plot=$1; prog=$2; replay=${3:-}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
CACHEALLOC_TRACE="$dir/t.csv" "$prog" || { echo "program failed"; exit 1; }
head -n1 "$dir/t.csv" | grep -qx 'seq,time_us,event,handle,size,stream' || { echo "bad header"; exit 1; }
count() { awk -F, -v e="$1" -v s="$2" 'NR>1 && $3==e && (s=="" || $5==s)' "$dir/t.csv" | wc -l; }
[ "$(count A 1111)" = 1 ] && [ "$(count A 2222)" = 1 ] && [ "$(count A 3333)" = 1 ] &&
    [ "$(count F 2222)" = 1 ] && [ "$(count F '')" = 1 ] && [ "$(count SA '')" -ge 1 ] &&
    [ "$(count HA 5000)" = 1 ] && [ "$(count HA 6000)" = 1 ] && [ "$(count HF 6000)" = 1 ] &&
    [ "$(count HF '')" = 1 ] && [ "$(count HSA 8192)" = 2 ] || {
    echo "unexpected timeline:"; cat "$dir/t.csv"; exit 1; }
python3 "$plot" "$dir/t.csv" -o "$dir/t.svg" && grep -q 'class="allocated"' "$dir/t.svg" || {
    echo "plot failed"; exit 1; }
if [ -n "$replay" ]; then
    out=$("$replay" "$dir/t.csv") || { echo "replay failed:"; echo "$out"; exit 1; }
    for want in allocs=3 frees=1 alloc_failures=0 free_failures=0; do
        printf '%s\n' "$out" | grep -qx "$want" || { echo "replay: no $want in:"; echo "$out"; exit 1; }
    done
    echo "replayed"
fi
echo "timeline ok: $(($(wc -l <"$dir/t.csv") - 1)) events"
