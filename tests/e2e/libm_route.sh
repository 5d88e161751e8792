#!/usr/bin/env bash
# A linked engine's libm calls routed to lockstep's math (examples/crates on Debian's prebuilt
# Box2D, lockstep_add_module(... ROUTED libbox2d)), on glibc's CPU paths:
# - the module as it was (crates_unrouted, Box2D on glibc's sinf/cosf/sincosf) records its golden
#   world on this CPU's default path and parts from it on glibc's baseline x86-64 path
#   (GLIBC_TUNABLES hwcaps without AVX2 and FMA): verify names the tick, and the state compared
#   names the entity and field (the golden world tilts a crate to an angle whose cosine the two
#   paths round apart);
# - the routed module verifies the checked-in golden replay on the default path, with AVX-512
#   masked and on the baseline path, and its loader says which calls it routed;
# - lockstep-lint reports the unrouted module's libm calls as findings and the routed module's as
#   routed.
# Usage: libm_route.sh BIN_DIR LIBCRATES LIBCRATES_UNROUTED GOLDEN_REPLAY LINT
source "$(dirname "$0")/lib.sh" "$1"
CRATES=$2 UNROUTED=$3 GOLDEN=$4 LINT=$5
[ -f "$CRATES" ] && [ -f "$UNROUTED" ] || fail "the crates modules are missing: $CRATES $UNROUTED"
if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
  echo "SKIPPED: this CPU has no AVX2 and FMA, so glibc's default path already is the baseline one"; exit 77
fi
BASELINE=glibc.cpu.hwcaps=-AVX2,-FMA
REPLAY="$BIN/lockstep-replay"

# The module as it was: recorded on the default path, parted on the baseline one.
"$REPLAY" --sim-lib "$UNROUTED" record-scenario "$WORK/unrouted.replay" --ticks 300 2>"$WORK/record.err" ||
  fail "recording the unrouted module's golden world"
"$REPLAY" --sim-lib "$UNROUTED" verify "$WORK/unrouted.replay" >"$WORK/default.out" 2>"$WORK/default.err" ||
  fail "the unrouted module should reproduce its own recording on the default path: $(cat "$WORK/default.out")"
GLIBC_TUNABLES=$BASELINE "$REPLAY" --sim-lib "$UNROUTED" verify "$WORK/unrouted.replay" >"$WORK/baseline.out" 2>"$WORK/baseline.err"
rc=$?
[ $rc = 3 ] || fail "the unrouted module on glibc's baseline path should part from the default path's recording (exit 3), got $rc: $(cat "$WORK/baseline.out")"
tick=$(sed -n 's/^MISMATCH at tick \([0-9]*\):.*/\1/p' "$WORK/baseline.out")
[ -n "$tick" ] || fail "verify did not name the tick: $(cat "$WORK/baseline.out")"
GLIBC_TUNABLES=$BASELINE "$REPLAY" --sim-lib "$UNROUTED" state "$WORK/unrouted.replay" --tick "$tick" -o "$WORK/baseline.state" \
  >/dev/null 2>"$WORK/state.err" || fail "writing the baseline path's state at tick $tick"
"$REPLAY" --sim-lib "$UNROUTED" compare "$WORK/unrouted.replay" "$WORK/baseline.state" --tick "$tick" >"$WORK/compare.json" 2>"$WORK/compare.err"
json_check "$WORK/compare.json" 'd["tick"] == '"$tick"' and d["where"] == "entity" and d["entity"] >= 0 and d["fields"][0]["name"] in ("x", "y", "angle", "vx", "vy", "w")' \
  "the comparison names the entity and field where the paths part"
echo "ok: unrouted: glibc's baseline path parts at tick $tick, $(json_get "$WORK/compare.json" '"entity %d field %s" % (d["entity"], d["fields"][0]["name"])')"

# The routed module: the checked-in golden replay on every path this CPU can take.
paths=("" "$BASELINE")
grep -qw avx512f /proc/cpuinfo && paths+=("glibc.cpu.hwcaps=-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL")
for p in "${paths[@]}"; do
  GLIBC_TUNABLES=$p "$REPLAY" --sim-lib "$CRATES" verify "$GOLDEN" >"$WORK/routed.out" 2>"$WORK/routed.err" ||
    fail "the routed module should verify the golden replay with GLIBC_TUNABLES='$p': $(cat "$WORK/routed.out")"
  echo "ok: routed, GLIBC_TUNABLES='$p': $(cat "$WORK/routed.out")"
done
grep -q "libbox2d.so.2: its atan2f, cosf, expf, sincosf, sinf routed to lockstep's math" "$WORK/routed.err" ||
  fail "the loader should say which of libbox2d's calls it routed: $(cat "$WORK/routed.err")"

# The lint: findings without routing, routed with it.
"$LINT" "$UNROUTED" >"$WORK/lint-unrouted.out" 2>&1 && fail "the lint passed the unrouted module's libm calls"
grep -q "libbox2d.so.2 (needed by libcrates_unrouted.so): libm: sincosf in b2Body::b2Body" "$WORK/lint-unrouted.out" ||
  fail "the lint should name libbox2d's sincosf: $(head -20 "$WORK/lint-unrouted.out")"
"$LINT" --allow-function 'libbox2d:b2Timer::*' "$CRATES" >"$WORK/lint-routed.out" 2>&1 ||
  fail "the lint should pass the routed module (its clock allowed): $(grep -v allowed "$WORK/lint-routed.out" | head -20)"
grep -q "allowed by routing (ROUTED libbox2d: lockstep's math at load): libm: sincosf in b2Body::b2Body" "$WORK/lint-routed.out" ||
  fail "the lint should report libbox2d's sincosf as routed"
echo "ok: the lint reports libbox2d's libm calls as findings unrouted and as routed with ROUTED libbox2d"
echo "PASS: libm routing on glibc's CPU paths"
