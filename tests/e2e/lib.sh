# Shared helpers for the end-to-end tests: real processes on loopback.
# Usage: source lib.sh <bin-dir>
set -u
BIN=${1:?bin dir}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-e2e.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# A UDP port unlikely to collide with a parallel test.
PORT=$(( 20000 + (RANDOM * 32768 + RANDOM + $$) % 40000 ))
fail() { echo "FAIL: $*"; for f in "$WORK"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done; exit 1; }
# Waits for pid $1 and checks its exit code is $2.
expect_exit() {
  local pid=$1 want=$2 what=$3 got
  wait "$pid"; got=$?
  [ "$got" = "$want" ] || fail "$what exited $got, expected $want"
  echo "ok: $what exited $got"
}
