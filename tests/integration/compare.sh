#!/bin/sh
# Run a program with the shim preloaded and without it; their outputs must be identical.
# Usage: compare.sh PROGRAM [ARGS...]   (LD_PRELOAD names the shim)
with=$("$@" 2>&1); rc_with=$?
without=$(env -u LD_PRELOAD "$@" 2>&1); rc_without=$?
if [ "$with" != "$without" ] || [ $rc_with != $rc_without ]; then
    echo "differs with the shim (exit $rc_with) and without (exit $rc_without)"
    printf '%s\n' "--- with the shim" "$with" "--- without" "$without"
    exit 1
fi
printf '%s\n' "$with"
exit $rc_with
