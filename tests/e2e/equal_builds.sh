#!/usr/bin/env bash
# Machine code at join: two builds of one module with one fingerprint (tests/modules/walkers.c, the
# second with a static "engine" built with FMA contraction) meet only when the determinism gate
# replayed them equal.
# - a server with libwalkers_plain.so refuses a client with libwalkers_fma.so, naming the cause
#   (the client's build has fused multiply-adds, the server's none) and both builds; the server's
#   log says which machine code it admits;
# - with --equal-builds listing both (the report lockstep-gate writes), the client joins and plays
#   with equal hash logs; a report without the server's own build admits nobody else, and says so;
# - a report that is not one is bad usage with a sentence.
source "$(dirname "$0")/lib.sh" "$1"
PLAIN="$BIN/libwalkers_plain.so" FMA="$BIN/libwalkers_fma.so"
[ -f "$PLAIN" ] && [ -f "$FMA" ] || fail "the walkers builds are missing"
code_of() { readelf -n "$1" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p'; }
plain=$(code_of "$PLAIN") fma=$(code_of "$FMA")
[ -n "$plain" ] && [ -n "$fma" ] && [ "$plain" != "$fma" ] || fail "the two builds should be other machine code: $plain $fma"

# Without a report: refused, the builds and causes named.
"$BIN/lockstep-server" --sim-lib "$PLAIN" --port "$PORT" --players 2 --ticks 300 --hash-log "$WORK/s1.log" \
    >"$WORK/s1.json" 2>"$WORK/s1.err" &
S=$!; PIDS+=($S)
start_bot a 1 --sim-lib "$PLAIN"; A=$BOT_PID
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name fma --sim-lib "$FMA" >"$WORK/fma.json" 2>"$WORK/fma.err"
[ $? = 4 ] || fail "a client with other machine code should be refused (exit 4)"
json_check "$WORK/fma.json" 'd["refused"] == "WrongFingerprint"' "refused as another build"
grep -q "the module's machine code differs: the joining peer's build has [1-9][0-9]* fused multiply-adds, the server's 0 (FMA contraction gives other results); ${fma:0:12} vs ${plain:0:12}, no gate run showed them equal (--equal-builds)" "$WORK/fma.err" ||
  fail "the refusal should name the cause and both builds: $(cat "$WORK/fma.err")"
grep -q "machine code $plain: peers with this build of the module join" "$WORK/s1.err" || fail "the server should say what it admits: $(head -5 "$WORK/s1.err")"
start_bot b 2 --sim-lib "$PLAIN"; B=$BOT_PID  # the same build joins
expect_exit $A 0 a; expect_exit $B 0 b; expect_exit $S 0 server
echo "ok: other machine code refused: $(grep -o "the module's machine code differs[^\"]*" "$WORK/fma.err" | head -1)"

# With the gate's report: admitted, and in step.
printf '{"format": "lockstep-equal-builds/1", "module": "walkers", "builds": [{"leg": "gcc-O2", "code": "%s"}, {"leg": "gcc-O2-fma", "code": "%s"}]}\n' \
  "$plain" "$fma" >"$WORK/equal.json"
"$BIN/lockstep-server" --sim-lib "$PLAIN" --port "$PORT" --players 2 --ticks 300 --hash-log "$WORK/s2.log" \
    --equal-builds "$WORK/equal.json" >"$WORK/s2.json" 2>"$WORK/s2.err" &
S=$!; PIDS+=($S)
start_bot c 3 --sim-lib "$PLAIN"; C=$BOT_PID
start_bot d 4 --sim-lib "$FMA"; D=$BOT_PID
expect_exit $C 0 c; expect_exit $D 0 d; expect_exit $S 0 server
cmp "$WORK/s2.log" "$WORK/d.log" && cmp "$WORK/s2.log" "$WORK/c.log" || fail "hash logs differ"
grep -q "machine code $plain: peers with this build or any of the 2 builds --equal-builds lists join" "$WORK/s2.err" ||
  fail "the server should say what it admits: $(head -5 "$WORK/s2.err")"
echo "ok: with the gate's report both builds play, hash logs equal"

# A report without the server's own build admits only it.
printf '{"format": "lockstep-equal-builds/1", "builds": [{"leg": "gcc-O2-fma", "code": "%s"}]}\n' "$fma" >"$WORK/other.json"
"$BIN/lockstep-server" --sim-lib "$PLAIN" --port "$PORT" --players 2 --ticks 100 --equal-builds "$WORK/other.json" \
    >/dev/null 2>"$WORK/s3.err" &
S=$!; PIDS+=($S)
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name fma --sim-lib "$FMA" >"$WORK/fma3.json" 2>/dev/null
[ $? = 4 ] || fail "a report without the server's build should admit no other build"
grep -q "machine code $plain is not among the 1 builds --equal-builds lists: only this build joins" "$WORK/s3.err" ||
  fail "the server should warn: $(head -5 "$WORK/s3.err")"
kill $S 2>/dev/null; wait $S 2>/dev/null
echo "ok: a report without the server's own build admits nobody else, and the server says so"

# Bad reports: bad usage with a sentence.
echo '{"format": "lockstep-equal-builds/1", "builds": [{"leg": "x"}]}' >"$WORK/bad.json"
"$BIN/lockstep-server" --sim-lib "$PLAIN" --port "$PORT" --equal-builds "$WORK/bad.json" >/dev/null 2>"$WORK/bad.err"; rc=$?
[ $rc = 2 ] && grep -q 'each of "builds" must have a "code" of 1-80 bytes' "$WORK/bad.err" || fail "a bad report: exit $rc, $(cat "$WORK/bad.err")"
"$BIN/lockstep-server" --sim-lib "$PLAIN" --port "$PORT" --equal-builds "$WORK/missing.json" >/dev/null 2>"$WORK/missing.err"; rc=$?
[ $rc = 2 ] && grep -q 'cannot read it' "$WORK/missing.err" || fail "a missing report: exit $rc, $(cat "$WORK/missing.err")"
echo "PASS: machine code checked at join; the gate's equal builds admitted"
