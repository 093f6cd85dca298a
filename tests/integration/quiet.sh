#!/bin/sh
# Run a command with the shim preloaded (from the environment); it must print exactly what it
# prints without the shim: the shim is inert in processes that never use CUDA or HIP.
with=$("$@" 2>&1); rc_with=$?
without=$(env -u LD_PRELOAD "$@" 2>&1); rc_without=$?
if [ "$with" != "$without" ] || [ $rc_with != $rc_without ]; then
    printf '%s\n' "output differs with the shim:" "$with" "--- without:" "$without"
    exit 1
fi
exit 0
