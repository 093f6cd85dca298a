#!/bin/sh
# run_fuzz.sh TARGET SEED_DIR: run a libFuzzer target for $FUZZ_SECONDS (default 5) from the
# seed corpus, with the new inputs it finds kept in a scratch directory (never the source
# tree). A crash fails the test and leaves its input in $FUZZ_ARTIFACTS (default the scratch
# directory): add that file to the seed corpus, where every build's plain driver replays it.
target=$1; seeds=$2
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
artifacts=${FUZZ_ARTIFACTS:-$work}
"$target" -max_total_time="${FUZZ_SECONDS:-5}" -seed=1 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "$seeds"
