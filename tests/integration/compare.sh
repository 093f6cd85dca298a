#!/bin/sh
# Run a program with the shim preloaded and without it; their outputs must be identical.
# Usage: compare.sh PROGRAM [ARGS...]   (LD_PRELOAD names the shim)
# With COMPARE_STDOUT_ONLY=1 only standard output and the exit status are compared; standard
# error passes through (the cache's out-of-memory line is the cache's own, not the program's).
if [ "${COMPARE_STDOUT_ONLY:-0}" = 1 ]; then
    with=$("$@"); rc_with=$?
    without=$(env -u LD_PRELOAD "$@"); rc_without=$?
else
    with=$("$@" 2>&1); rc_with=$?
    without=$(env -u LD_PRELOAD "$@" 2>&1); rc_without=$?
fi
if [ "$with" != "$without" ] || [ $rc_with != $rc_without ]; then
    echo "differs with the shim (exit $rc_with) and without (exit $rc_without)"
    printf '%s\n' "--- with the shim" "$with" "--- without" "$without"
    exit 1
fi
printf '%s\n' "$with"
exit $rc_with
