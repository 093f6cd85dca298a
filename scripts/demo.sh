#!/usr/bin/env bash
# The main job, shown: the same unmodified CUDA program run plainly and under
# LD_PRELOAD=libcachealloc.so. On a machine without a GPU it runs on the simulated device.
#   scripts/demo.sh [iterations] [bytes]      (defaults: 1000 iterations of 2 GiB)
set -euo pipefail
cd "$(dirname "$0")/.."
iterations="${1:-1000}"
bytes="${2:-$((2 << 30))}"
builddir=build

bash scripts/setup.sh >/dev/null
[ -f "$builddir/build.ninja" ] || meson setup "$builddir" >/dev/null
meson compile -C "$builddir" >/dev/null

prog="$builddir/tests/demo/alloc_loop"
shim="$PWD/$builddir/shim/libcachealloc.so"
top="$builddir/tools/cachealloc-top"
if [ ! -x "$prog" ]; then
    echo "demo: the example needs the CUDA toolkit's headers (set CUDA_PATH); none was found" >&2
    exit 1
fi

cuda="${CUDA_PATH:-/usr/local/cuda}"
if LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$prog" --probe 2>/dev/null; then
    device="a real GPU (the CUDA runtime in $cuda)"
    libpath="$cuda/lib64"
else
    device="the simulated device (no usable GPU here; see docs/simdevice.md)"
    libpath="$PWD/$builddir/tests/simdevice/driver:$cuda/lib64"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }

echo "cachealloc demo: $iterations x (cudaMalloc $bytes bytes, a 1 MiB memset on the stream, cudaFree)"
echo "running on $device"
echo

t0=$(now)
SIMDEV_COUNTERS_FILE="$tmp/plain.counters" LD_LIBRARY_PATH="$libpath" \
    "$prog" "$iterations" "$bytes" >"$tmp/plain.out"
t1=$(now)

# The cached run stays alive a moment after its loop, so cachealloc-top can watch it.
SIMDEV_COUNTERS_FILE="$tmp/cached.counters" LD_LIBRARY_PATH="$libpath" LD_PRELOAD="$shim" \
    ALLOC_LOOP_HOLD_MS=1500 "$prog" "$iterations" "$bytes" >"$tmp/cached.out" &
pid=$!
t2=$(now)
for _ in $(seq 1 600); do
    grep -q iterations "$tmp/cached.out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
done
t3=$(now)
sleep 0.3 # one publication period of the stats thread
"$top" --once --pid "$pid" >"$tmp/top.out" 2>&1 || true
wait "$pid"

counter() { # file name
    [ -f "$1" ] && sed -n "s/^$2=//p" "$1" | head -n1 || echo "n/a"
}

python3 - "$t0" "$t1" "$t2" "$t3" <<'PY' >"$tmp/times"
import sys
t0, t1, t2, t3 = map(float, sys.argv[1:])
plain, cached = t1 - t0, t3 - t2
print("%.3f %.3f %.1f" % (plain, cached, plain / cached if cached > 0 else float("inf")))
PY
read -r plain cached speedup <"$tmp/times"

printf '%-22s %12s %14s %14s %14s\n' "run" "wall time" "driver allocs" "driver frees" "device syncs"
printf '%-22s %11ss %14s %14s %14s\n' "plain" "$plain" \
    "$(counter "$tmp/plain.counters" malloc_calls)" "$(counter "$tmp/plain.counters" free_calls)" \
    "$(counter "$tmp/plain.counters" device_syncs)"
printf '%-22s %11ss %14s %14s %14s\n' "LD_PRELOAD cachealloc" "$cached" \
    "$(counter "$tmp/cached.counters" malloc_calls)" "$(counter "$tmp/cached.counters" free_calls)" \
    "$(counter "$tmp/cached.counters" device_syncs)"
echo
echo "speedup: ${speedup}x   (program's own loop time: plain $(sed 's/.*: //' "$tmp/plain.out"), cached $(sed 's/.*: //' "$tmp/cached.out"))"
echo
echo "cachealloc-top --once, taken while the cached run was alive:"
sed 's/^/  /' "$tmp/top.out"
