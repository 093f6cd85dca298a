#!/bin/sh
# exits_check.sh MODE PROGRAM: run tests/integration/exits.c in MODE (quick, underscore, kill)
# with a timeline, a leak report and a statistics directory, and check what it left: a readable
# timeline with its three allocations and one free and no torn last line, whatever the exit;
# after quick_exit also the leak report and no statistics segment.
mode=$1; prog=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/shm"
CACHEALLOC_TRACE="$dir/t.csv" CACHEALLOC_SHM_DIR="$dir/shm" CACHEALLOC_LEAK_CHECK=1 \
    CACHEALLOC_STATS=1 "$prog" "$mode" 2>"$dir/err"
status=$?
case $mode in
kill) [ $status -eq 137 ] || { echo "expected death by SIGKILL, got $status"; exit 1; } ;;
*) [ $status -eq 0 ] || { echo "program failed ($status):"; cat "$dir/err"; exit 1; } ;;
esac
[ -s "$dir/t.csv" ] && [ "$(tail -c1 "$dir/t.csv" | od -An -c | tr -d ' ')" = '\n' ] || {
    echo "timeline empty or ends in a torn line:"; cat "$dir/t.csv"; exit 1; }
head -n1 "$dir/t.csv" | grep -qx 'seq,time_us,event,handle,size,stream' || { echo "bad header"; exit 1; }
awk -F, 'NR > 1 && NF != 6 { bad = 1 } END { exit bad }' "$dir/t.csv" || {
    echo "malformed timeline:"; cat "$dir/t.csv"; exit 1; }
count() { awk -F, -v e="$1" -v s="$2" 'NR>1 && $3==e && (s=="" || $5==s)' "$dir/t.csv" | wc -l; }
[ "$(count A 1111)" = 1 ] && [ "$(count A 2222)" = 1 ] && [ "$(count A 3333)" = 1 ] &&
    [ "$(count F 2222)" = 1 ] || { echo "unexpected timeline:"; cat "$dir/t.csv"; exit 1; }
if [ "$mode" = quick ]; then
    grep -q 'allocations never freed' "$dir/err" || { echo "no leak report:"; cat "$dir/err"; exit 1; }
    [ -z "$(ls "$dir/shm")" ] || { echo "statistics segment left behind: $(ls "$dir/shm")"; exit 1; }
fi
echo "$mode: timeline of $(($(wc -l <"$dir/t.csv") - 1)) events"
