#!/bin/sh
# not_needed.sh READELF PATTERN FILE...: no FILE names a library matching PATTERN among the
# libraries it needs (its NEEDED entries).
readelf=$1; pattern=$2; shift 2
status=0
for f in "$@"; do
    needed=$("$readelf" -d "$f" | grep '(NEEDED)') || { echo "$f: no dynamic section"; status=1; continue; }
    if printf '%s\n' "$needed" | grep -q -- "$pattern"; then
        echo "$f needs:"; printf '%s\n' "$needed" | grep -- "$pattern"
        status=1
    fi
done
[ $status = 0 ] && echo "$# files, none needs $pattern"
exit $status
