#!/usr/bin/env bash
# Builds the libFuzzer target with clang (-fsanitize=fuzzer,address,undefined) and runs it for
# SECONDS (default 60) over the checked-in seed corpus. A finding fails the run.
# Usage: tools/fuzz.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
BUILD=${2:-build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz: FAIL: clang++ is missing (apt-get install clang)"; exit 1; }
# At -O1 with line tables only (-g1), as the sanitizer pass (tools/sanitize.sh): libFuzzer's and
# AddressSanitizer's documentation suggest -O1 or more, and the reports keep their file and line.
# A unity build, as the sanitizer tree's (tools/sanitize.sh): the same code in fewer compilations.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKSTEP_FUZZ=ON -DCMAKE_UNITY_BUILD=ON \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j 2 --target lockstep-fuzz >"$BUILD/fuzz-build.log" 2>&1 ||
  { grep -E 'error|FAILED' "$BUILD/fuzz-build.log" | head -20; echo "fuzz: FAIL: the fuzzer did not build (see $BUILD/fuzz-build.log)"; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp tests/fuzz/corpus/* "$work/"
"$BUILD/bin/lockstep-fuzz" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$work" 2>"$BUILD/fuzz.log" || { tail -40 "$BUILD/fuzz.log"; echo "FAIL: the fuzzer found a crash"; exit 1; }
grep -E 'stat::number_of_executed_units|cov:' "$BUILD/fuzz.log" | tail -2
echo "PASS: ${SECONDS_TO_RUN}s of fuzzing, no finding"
