#!/usr/bin/env bash
# Record a session with real processes, verify it, and show that corruption, truncation,
# foreign files and a perturbed simulation are each caught with the right exit code.
source "$(dirname "$0")/lib.sh" "$1"
R="$BIN/lockstep-replay"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 400 --record "$WORK/s.replay" --hash-log "$WORK/server.log" >/dev/null 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot a 1; A=$BOT_PID
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name b --bot 2 >/dev/null 2>"$WORK/b.err" &
B=$!; PIDS+=($B)
expect_exit $A 0 a; expect_exit $B 0 b; expect_exit $S 0 server

"$R" verify "$WORK/s.replay" >"$WORK/verify.out" || fail "verify of a good replay failed"
grep -q 'OK 400 ticks verified' "$WORK/verify.out" || fail "verify output: $(cat "$WORK/verify.out")"
"$R" diff "$WORK/s.replay" "$WORK/a.log" >/dev/null || fail "replay and client hash log should match"
"$R" trace "$WORK/s.replay" --from 10 --to 12 >"$WORK/trace.out"
[ "$(wc -l <"$WORK/trace.out")" = 3 ] && sed -n 10,12p "$WORK/server.log" | cmp - "$WORK/trace.out" || fail "trace --from/--to"
"$R" info "$WORK/s.replay" >"$WORK/info.json" || fail "info exited $?"
json_check "$WORK/info.json" 'd["ticks"] == 400 and sorted(d["names"]) == ["a", "b"] and d["complete"]' "info"

# One byte of one input flipped in the middle of the file: the record checksum catches it.
cp "$WORK/s.replay" "$WORK/flip.replay"
size=$(stat -c %s "$WORK/flip.replay")
printf '\xff' | dd of="$WORK/flip.replay" bs=1 seek=$((size / 2)) conv=notrunc status=none
"$R" verify "$WORK/flip.replay" >/dev/null 2>"$WORK/flip.err"; rc=$?
[ $rc = 2 ] || fail "flipped byte: exit $rc, expected 2"
grep -q 'checksum mismatch' "$WORK/flip.err" || fail "flipped byte: $(cat "$WORK/flip.err")"

# Truncated: exit 2 with a clear reason; --allow-incomplete verifies the complete part.
head -c $((size - 100)) "$WORK/s.replay" >"$WORK/cut.replay"
"$R" verify "$WORK/cut.replay" >/dev/null 2>"$WORK/cut.err"; rc=$?
[ $rc = 2 ] || fail "truncated: exit $rc, expected 2"
grep -q 'truncated' "$WORK/cut.err" || fail "truncated: $(cat "$WORK/cut.err")"
"$R" verify --allow-incomplete "$WORK/cut.replay" >/dev/null 2>&1 || fail "--allow-incomplete should verify the complete part"

# Foreign and empty files.
echo "hello" >"$WORK/foreign"
"$R" verify "$WORK/foreign" >/dev/null 2>&1; [ $? = 2 ] || fail "foreign file: expected exit 2"
: >"$WORK/empty"
"$R" verify "$WORK/empty" >/dev/null 2>&1; [ $? = 2 ] || fail "empty file: expected exit 2"
"$R" verify "$WORK/missing" >/dev/null 2>&1; [ $? = 2 ] || fail "missing file: expected exit 2"
head -c 5000 /dev/urandom >"$WORK/random"
"$R" diff "$WORK/random" "$WORK/server.log" >/dev/null 2>&1; [ $? = 2 ] || fail "diff of random bytes: expected exit 2"

# A perturbed simulation: verify stops at exactly that tick with exit 3.
"$R" verify "$WORK/s.replay" --perturb-at 123 >"$WORK/pert.out"; rc=$?
[ $rc = 3 ] || fail "perturbed: exit $rc, expected 3"
grep -q 'MISMATCH at tick 123:' "$WORK/pert.out" || fail "perturbed: $(cat "$WORK/pert.out")"

# Offline localization: the build that parts (here the perturbed one) writes its state at the
# mismatching tick; a build that verifies compares it with its own and names the entity and field.
"$R" verify "$WORK/s.replay" --perturb-at 123 --state-out "$WORK/parted.state" >"$WORK/parted.out"; rc=$?
[ $rc = 3 ] && [ -s "$WORK/parted.state" ] && grep -q "lockstep-replay compare .* --tick 123" "$WORK/parted.out" ||
  fail "verify --state-out: exit $rc, $(cat "$WORK/parted.out")"
"$R" compare "$WORK/s.replay" "$WORK/parted.state" --tick 123 >"$WORK/cmp.json" 2>"$WORK/cmp.err"; rc=$?
[ $rc = 3 ] || fail "compare of the parted state: exit $rc, expected 3 ($(cat "$WORK/cmp.err"))"
json_check "$WORK/cmp.json" 'd["tick"] == 123 and d["where"] in ("entity", "global") and len(d["fields"]) >= 1 and d["fields"][0]["this_build"]["bits"] != d["fields"][0]["other"]["bits"]' \
  "compare names the entity and field, both values"
grep -q "tick 123: .*field" "$WORK/cmp.err" || fail "compare's sentence: $(cat "$WORK/cmp.err")"
"$R" state "$WORK/s.replay" --tick 123 -o "$WORK/same.state" >/dev/null 2>&1 || fail "state at tick 123"
"$R" compare "$WORK/s.replay" "$WORK/same.state" --tick 123 >"$WORK/same.json" 2>/dev/null || fail "equal states should compare equal"
json_check "$WORK/same.json" 'd["where"] == "none"' "equal states"
head -c 40 "$WORK/same.state" >"$WORK/cut.state"
"$R" compare "$WORK/s.replay" "$WORK/cut.state" --tick 123 >/dev/null 2>&1; [ $? = 2 ] || fail "a truncated state: expected exit 2"
"$R" compare "$WORK/s.replay" "$WORK/parted.state" --tick 124 >/dev/null 2>&1; [ $? = 2 ] || fail "a state of another tick: expected exit 2"
"$R" state "$WORK/s.replay" --tick 999999 -o "$WORK/none.state" >/dev/null 2>&1; [ $? = 2 ] || fail "a tick past the end: expected exit 2"
echo "ok: $(sed -n 's/.*error: //p' "$WORK/cmp.err")"

# diff names the first differing tick.
sed '77s/ .*/ 0000000000000000/' "$WORK/server.log" >"$WORK/bad.log"
"$R" diff "$WORK/server.log" "$WORK/bad.log" >"$WORK/diff.out"; rc=$?
[ $rc = 3 ] && grep -q 'first difference at tick 77' "$WORK/diff.out" || fail "diff: exit $rc, $(cat "$WORK/diff.out")"
echo "PASS: record, verify, corruption, truncation, foreign files, perturbation, offline localization (state, compare), diff"
