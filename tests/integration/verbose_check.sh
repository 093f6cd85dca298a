#!/bin/sh
# verbose_check.sh DOOR PROGRAM: with CACHEALLOC_VERBOSE=1 the program's stderr has the start
# line naming DOOR and one summary line at exit; without it, no line of the shim at all.
door=$1; shift
err=$(CACHEALLOC_VERBOSE=1 "$@" 2>&1 >/dev/null) || { echo "program failed: $err"; exit 1; }
[ "$(printf '%s\n' "$err" | grep -c "^cachealloc [0-9.]*: serving $door")" = 1 ] || {
    echo "no single start line naming \"$door\" in:"; echo "$err"; exit 1; }
[ "$(printf '%s\n' "$err" | grep -c '^cachealloc: .* allocations served, .* cache hits, .* driver calls avoided, peak reserved')" = 1 ] || {
    echo "no single summary line in:"; echo "$err"; exit 1; }
quiet=$(env -u CACHEALLOC_VERBOSE "$@" 2>&1 >/dev/null)
if printf '%s\n' "$quiet" | grep -q cachealloc; then
    echo "lines without CACHEALLOC_VERBOSE:"; echo "$quiet"; exit 1
fi
echo "verbose ok"
