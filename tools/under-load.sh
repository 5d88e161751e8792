#!/usr/bin/env bash
# The test suite run again and again beside a CPU hog, as a busy CI machine runs it: a test that
# fails only when the machine is busy is a test of the machine. Each run is the suite as
# `./quickstart test` runs it (ctest -j LOCKSTEP_TEST_JOBS over the tree's schedule); the hog keeps
# every core busy meanwhile (stress-ng --cpu N when installed, else one `yes` a core). Prints each
# run's failures and then how often each test failed; exits 1 when any test failed in any run.
# Usage: tools/under-load.sh [--runs N] [--build DIR] [--hogs N] [-- ctest options, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=3 BUILD=build HOGS=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --hogs) HOGS=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "under-load.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -f "$BUILD/CTestTestfile.cmake" ] || { echo "under-load.sh: no test tree in $BUILD (build it first: ./quickstart test)" >&2; exit 2; }
JOBS=$(sed -n 's/^LOCKSTEP_TEST_JOBS:STRING=//p' "$BUILD/CMakeCache.txt"); JOBS=${JOBS:-2}
WORK=$(mktemp -d)
HOG_PIDS=()
stop_hogs() { for p in "${HOG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; HOG_PIDS=(); }
trap 'stop_hogs; rm -rf "$WORK"' EXIT
if command -v stress-ng >/dev/null; then
  stress-ng --cpu "$HOGS" --quiet & HOG_PIDS+=($!)
  hog="stress-ng --cpu $HOGS"
else
  for _ in $(seq "$HOGS"); do yes >/dev/null & HOG_PIDS+=($!); done
  hog="$HOGS x yes"
fi
echo "under-load: $RUNS run(s) of ctest -j $JOBS in $BUILD beside $hog${*:+ (ctest $*)}"
start=$(date +%s)
for run in $(seq "$RUNS"); do
  t0=$(date +%s)
  rm -f "$BUILD/Testing/Temporary/LastTestsFailed.log"
  ctest --test-dir "$BUILD" -j "$JOBS" --output-on-failure "$@" >"$WORK/run$run.log" 2>&1 || true
  summary=$(grep -E '^[0-9]+% tests passed' "$WORK/run$run.log" || echo "no summary (see the log)")
  failed=$(sed 's/^[0-9]*://' "$BUILD/Testing/Temporary/LastTestsFailed.log" 2>/dev/null || true)
  printf 'run %s: %s in %s s\n' "$run" "$summary" "$(( $(date +%s) - t0 ))"
  [ -n "$failed" ] && printf '%s\n' "$failed" | sed 's/^/  failed: /' && printf '%s\n' "$failed" >>"$WORK/failures"
  cp "$WORK/run$run.log" "$BUILD/Testing/Temporary/under-load-run$run.log"
done
stop_hogs
echo "under-load: $RUNS run(s) in $(( $(date +%s) - start )) s; logs in $BUILD/Testing/Temporary/under-load-run*.log"
if [ -s "$WORK/failures" ]; then
  echo "failures by test (of $RUNS runs):"
  sort "$WORK/failures" | uniq -c | sort -rn | sed 's/^/  /'
  exit 1
fi
echo "no test failed in any run"
