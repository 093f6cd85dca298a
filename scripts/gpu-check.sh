#!/usr/bin/env bash
# The GPU check: proves the cache on a real NVIDIA GPU in at most 13 minutes, from a build made
# elsewhere (docs/gpu.md).
#
#   scripts/gpu-check.sh --pack [BUILDDIR]    here: build, then write gpu-pack/ (a manifest of
#                                             the tests of suite "gpu" and a tarball of the built
#                                             programs) to carry to the GPU machine
#   scripts/gpu-check.sh [OPTIONS] OUTDIR     on the GPU machine: run the check from gpu-pack/
#   scripts/gpu-check.sh --sim [OPTIONS] OUTDIR
#                                             here: pack and run the same check on the simulated
#                                             driver (what needs a GPU or absent Python packages
#                                             is skipped, and says so)
# OPTIONS: --budget SECONDS (default 750; 1800 with --sim), --only SECTION[,SECTION]
# (reuse, integration, frameworks, libraries, memcheck, bench, probes), --jobs N (integration
# tests at once). Writes OUTDIR/report.md and OUTDIR/report.json (after each section),
# OUTDIR/log.txt and, from the reuse section's probe, OUTDIR/simdev-profile.env; prints one
# summary table.
# Exits 1 when a section failed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=$repo/scripts/gpu/check.py
packdir=$repo/gpu-pack

# The traces the benchmarks replay beside the shipped small one, when they are next to the repo.
traces() {
    local d=$repo/../shared/traces
    [ -d "$d" ] && ls "$d"/*.csv 2>/dev/null || true
}

build_and_pack() {  # builddir packdir
    local log
    log=$(mktemp)
    if ! { [ -f "$1/build.ninja" ] || meson setup "$1" "$repo"; } >"$log" 2>&1 ||
       ! meson compile -C "$1" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "gpu-check: the build failed" >&2
        exit 1
    fi
    rm -f "$log"
    # shellcheck disable=SC2046  # one argument per trace file
    python3 "$check" pack "$1" "$2" $(traces)
}

case ${1:-} in
--pack)
    builddir=${2:-$repo/build}
    bash "$repo/scripts/setup.sh" >/dev/null || { bash "$repo/scripts/setup.sh"; exit 1; }
    build_and_pack "$builddir" "$packdir"
    echo "carry gpu-pack/ to the GPU machine and run: scripts/gpu-check.sh OUTDIR"
    ;;
--sim)
    shift
    [ $# -ge 1 ] || { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
    outdir=${*: -1}
    mkdir -p "$outdir"
    build_and_pack "${GPU_CHECK_BUILDDIR:-$repo/build}" "$outdir/pack"
    exec python3 "$check" run --sim --pack-dir "$outdir/pack" "$@"
    ;;
""|-h|--help)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
*)
    if [ ! -f "$packdir/manifest.json" ]; then
        echo "gpu-check: no gpu-pack/ here: run scripts/gpu-check.sh --pack where the project builds" >&2
        exit 2
    fi
    exec python3 "$check" run --pack-dir "$packdir" "$@"
    ;;
esac
