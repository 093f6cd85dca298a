#!/bin/sh
# expect_stderr.sh PATTERN COUNT PROGRAM [ARGS...]: the program's stderr must contain exactly
# COUNT lines matching PATTERN. Its exit status does not matter, unless EXPECT_STATUS names the
# one it must have.
pattern=$1; count=$2; shift 2
err=$("$@" 2>&1 >/dev/null)
status=$?
n=$(printf '%s\n' "$err" | grep -c -- "$pattern")
if [ "$n" != "$count" ]; then
    printf '%s\n' "expected $count line(s) matching '$pattern', got $n:" "$err"
    exit 1
fi
if [ -n "${EXPECT_STATUS:-}" ] && [ "$status" != "$EXPECT_STATUS" ]; then
    printf '%s\n' "expected exit status $EXPECT_STATUS, got $status:" "$err"
    exit 1
fi
printf '%s\n' "$err"
exit 0
