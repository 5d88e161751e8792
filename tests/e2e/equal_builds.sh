#!/usr/bin/env bash
# Machine code at join: two builds of one module with one fingerprint (tests/modules/walkers.c, the
# second with a static "engine" built with FMA contraction) meet only when the determinism gate
# replayed them equal.
# - a server with libwalkers_plain.so refuses a client with libwalkers_fma.so, naming the cause
#   (the client's build has fused multiply-adds, the server's none) and both builds; the server's
#   log says which machine code it admits;
# - with --equal-builds listing both (the report lockstep-gate writes), the client joins and plays
#   with equal hash logs; a report without the server's own build admits nobody else, and says so;
# - one module file over two builds of an engine library it opts out of its fingerprint (UNCOVERED),
#   one with FMA contraction: the machine code covers the engine, so the FMA one is refused, naming
#   the engine's fused multiply-adds, until a gate report lists both;
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

# An engine the module links and opts out of its fingerprint (UNCOVERED libwengine): one module
# file, two builds of the engine (one with FMA contraction) under one soname. The fingerprint
# cannot tell them apart, so the machine code does: the module's and the opted-out engine's.
WMOD="$BIN/libwalkers_wengine.so"
[ -f "$WMOD" ] && [ -f "$BIN/wengine-plain/libwengine.so" ] && [ -f "$BIN/wengine-fma/libwengine.so" ] || fail "the wengine builds are missing"
LD_LIBRARY_PATH="$BIN/wengine-plain" "$BIN/lockstep-server" --sim-lib "$WMOD" --port "$PORT" --players 2 --ticks 300 \
    --hash-log "$WORK/s4.log" >/dev/null 2>"$WORK/s4.err" &
S=$!; PIDS+=($S)
LD_LIBRARY_PATH="$BIN/wengine-plain" start_bot e 5 --sim-lib "$WMOD"; E=$BOT_PID
LD_LIBRARY_PATH="$BIN/wengine-fma" "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name wfma --sim-lib "$WMOD" \
    >"$WORK/wfma.json" 2>"$WORK/wfma.err"
[ $? = 4 ] || fail "a client whose opted-out engine is an FMA build should be refused (exit 4)"
grep -q "the module's machine code differs: the joining peer's build has [1-9][0-9]* fused multiply-adds, the server's 0" "$WORK/wfma.err" ||
  fail "the refusal should name the engine's fused multiply-adds: $(cat "$WORK/wfma.err")"
wplain=$(sed -n 's/.*machine code \(xxh3:[0-9a-f]*\) (0 fused multiply-adds; with the libraries it opts out: libwengine.so (build [0-9a-f]*, 0 fused.*/\1/p' "$WORK/s4.err" | head -1)
wfma=$(sed -n 's/.*machine code \(xxh3:[0-9a-f]*\) ([1-9][0-9]* fused multiply-adds; with the libraries it opts out: libwengine.so .*/\1/p' "$WORK/wfma.err" | head -1)
[ -n "$wplain" ] && [ -n "$wfma" ] && [ "$wplain" != "$wfma" ] || fail "each process should log its machine code with the engine's build: '$wplain' '$wfma'"
LD_LIBRARY_PATH="$BIN/wengine-plain" start_bot f 6 --sim-lib "$WMOD"; F=$BOT_PID
expect_exit $E 0 e; expect_exit $F 0 f; expect_exit $S 0 server
echo "ok: an FMA build of an opted-out engine refused: $(grep -o "the module's machine code differs[^\"]*" "$WORK/wfma.err" | head -1)"
# The gate's report admits both: they play.
printf '{"format": "lockstep-equal-builds/1", "builds": [{"leg": "plain", "code": "%s"}, {"leg": "fma", "code": "%s"}]}\n' \
  "$wplain" "$wfma" >"$WORK/wequal.json"
LD_LIBRARY_PATH="$BIN/wengine-plain" "$BIN/lockstep-server" --sim-lib "$WMOD" --port "$PORT" --players 2 --ticks 300 \
    --hash-log "$WORK/s5.log" --equal-builds "$WORK/wequal.json" >/dev/null 2>"$WORK/s5.err" &
S=$!; PIDS+=($S)
LD_LIBRARY_PATH="$BIN/wengine-plain" start_bot g 7 --sim-lib "$WMOD"; G=$BOT_PID
LD_LIBRARY_PATH="$BIN/wengine-fma" start_bot h 8 --sim-lib "$WMOD"; H=$BOT_PID
expect_exit $G 0 g; expect_exit $H 0 h; expect_exit $S 0 server
cmp "$WORK/s5.log" "$WORK/h.log" || fail "hash logs differ"
echo "ok: with the gate's report both engine builds play"

# Bad reports: bad usage with a sentence.
echo '{"format": "lockstep-equal-builds/1", "builds": [{"leg": "x"}]}' >"$WORK/bad.json"
"$BIN/lockstep-server" --sim-lib "$PLAIN" --port "$PORT" --equal-builds "$WORK/bad.json" >/dev/null 2>"$WORK/bad.err"; rc=$?
[ $rc = 2 ] && grep -q 'each of "builds" must have a "code" of 1-80 bytes' "$WORK/bad.err" || fail "a bad report: exit $rc, $(cat "$WORK/bad.err")"
"$BIN/lockstep-server" --sim-lib "$PLAIN" --port "$PORT" --equal-builds "$WORK/missing.json" >/dev/null 2>"$WORK/missing.err"; rc=$?
[ $rc = 2 ] && grep -q 'cannot read it' "$WORK/missing.err" || fail "a missing report: exit $rc, $(cat "$WORK/missing.err")"
echo "PASS: machine code checked at join; the gate's equal builds admitted"
