#!/usr/bin/env bash
# The test command: setup, configure, build, run every Meson test suite.
#   scripts/test.sh              plain build in build/
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/
#   scripts/test.sh --tsan       ThreadSanitizer in build-tsan/ (any report fails its test)
#   scripts/test.sh --fuzz       clang build in build-fuzz/: the fuzz and tools suites, each
#                                libFuzzer target for FUZZ_SECONDS (default 30)
# Extra arguments after the option go to `meson test` (e.g. --suite unit).
# The install is tested too: `meson install --destdir` into a temporary directory, then the
# installed launcher on a CUDA program (test install-destdir, suite tools).
set -euo pipefail
cd "$(dirname "$0")/.."

builddir=build
# Every build of the test command checks the arena's invariants as it runs (src/base/ca_assert.h).
setup_args=(-Dassertions=true)
if [ "${1:-}" = "--sanitize" ]; then
    shift
    builddir=build-asan
    setup_args+=(-Db_sanitize=address,undefined -Db_lundef=false)
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
elif [ "${1:-}" = "--fuzz" ]; then
    shift
    builddir=build-fuzz
    export CC=clang FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
    [ $# -gt 0 ] || set -- --suite fuzz --suite tools
elif [ "${1:-}" = "--tsan" ]; then
    shift
    builddir=build-tsan
    setup_args+=(-Db_sanitize=thread -Db_lundef=false)
    # A report makes the program exit 66 at its end: its test fails. No suppressions.
    export TSAN_OPTIONS="second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
fi

bash scripts/setup.sh
if [ -f "$builddir/build.ninja" ]; then
    meson setup --reconfigure "$builddir" "${setup_args[@]}" >/dev/null
else
    meson setup "$builddir" "${setup_args[@]}" >/dev/null
fi
meson compile -C "$builddir"

status=0
meson test -C "$builddir" --print-errorlogs "$@" || status=$?

# One closing line any CI reader understands, counted from Meson's own log.
python3 - "$builddir/meson-logs/testlog.json" <<'PY' || true
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for line in open(sys.argv[1]):
    r = json.loads(line).get("result", "")
    if r in ("OK", "EXPECTEDFAIL"):
        counts["passed"] += 1
    elif r == "SKIP":
        counts["skipped"] += 1
    else:
        counts["failed"] += 1
print("%d passed, %d failed, %d skipped" % (counts["passed"], counts["failed"], counts["skipped"]))
PY
exit $status
