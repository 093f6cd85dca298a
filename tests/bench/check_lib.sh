# Helpers of the bench suite's behaviour checks (check_replay.sh, check_loop.sh), sourced: a
# scratch directory $tmp, removed at exit, and the functions below.

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
# value KEY FILE: the value of a key=value line
value() { sed -n "s/^$1=//p" "$2" | head -n 1; }

# run NAME CMD...: run a benchmark program, keep its output, insist every call it counted
# succeeded (every *failures= line is 0) and that it read the simulator's counters.
run() {
    name=$1
    shift
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    cat "$tmp/$name.out" "$tmp/$name.err" | sed "s/^/[$name] /"
    [ "$rc" -eq 0 ] || fail "$name: exit status $rc"
    ! grep -Eq '^[a-z_]*failures=[^0]' "$tmp/$name.out" || fail "$name: a call failed"
    [ -n "$(value driver_mallocs "$tmp/$name.out")" ] || fail "$name: no simulator counters"
}
