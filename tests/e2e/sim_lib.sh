#!/usr/bin/env bash
# A simulation module from a shared library (tests/modules/walkers.c, plain C, module_abi.h) is
# loaded by the stock server, clients and replay tool with --sim-lib: a session with two bots
# completes with equal hash logs, its replay verifies, a client of another module is refused,
# and a missing file, a library without the entry point and one of another ABI version are bad
# usage with a sentence saying which.
source "$(dirname "$0")/lib.sh" "$1"
LIB="$BIN/libwalkers.so"
[ -f "$LIB" ] || fail "$LIB was not built"
"$BIN/lockstep-server" --sim-lib "$LIB" --world seed=7 --port "$PORT" --players 2 --ticks 400 \
    --hash-log "$WORK/server.log" --record "$WORK/walkers.replay" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot a 1 --sim-lib "$LIB" --summary "$WORK/a.json"; A=$BOT_PID
start_bot b 2 --sim-lib "$LIB"; B=$BOT_PID
# A client of another module has another fingerprint: refused while the lobby waits.
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name other --sim arena >"$WORK/other.json" 2>"$WORK/other.err"
[ $? = 4 ] || fail "a client of another module should be refused (exit 4)"
json_check "$WORK/other.json" 'd["refused"] == "WrongFingerprint"' "a client of another module was not refused for its fingerprint"
# Other rules under the same name and version (walkers_rules2): its build id, derived from the
# sources and definitions, differs, so it is refused at join instead of desyncing in play.
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name rules2 --sim-lib "$BIN/libwalkers_rules2.so" >"$WORK/rules2.json" 2>"$WORK/rules2.err"
[ $? = 4 ] || fail "a client with other rules should be refused (exit 4)"
json_check "$WORK/rules2.json" 'd["refused"] == "WrongFingerprint"' "a client with other rules was not refused for its fingerprint"
expect_exit $A 0 a
expect_exit $B 0 b
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/a.log" && cmp "$WORK/server.log" "$WORK/b.log" || fail "hash logs differ"
[ "$(wc -l <"$WORK/server.log")" = 400 ] || fail "the session did not reach tick 400"
json_check "$WORK/server.json" 'd["desyncs"] == [] and d["hashes_compared"] >= 790' "hashes were not compared"
"$BIN/lockstep-replay" --sim-lib "$LIB" verify "$WORK/walkers.replay" >"$WORK/verify.out" 2>&1 || fail "verify: $(cat "$WORK/verify.out")"
grep -q '^OK 400 ticks verified (walkers seed=7, 2 players)' "$WORK/verify.out" || fail "verify: $(cat "$WORK/verify.out")"
"$BIN/lockstep-replay" --sim-lib "$LIB" info "$WORK/walkers.replay" >"$WORK/info.json" || fail "info"
json_check "$WORK/info.json" 'd["sim"] == "walkers" and d["settings"] == "seed=7" and d["ticks"] == 400' "info"
# The arena cannot replay it: the fingerprint differs and the settings are not the arena's.
"$BIN/lockstep-replay" verify "$WORK/walkers.replay" >/dev/null 2>&1 && fail "the arena verified a walkers replay"
# Refusals, each with its reason.
"$BIN/lockstep-server" --sim-lib "$WORK/missing.so" >/dev/null 2>"$WORK/missing.err"; [ $? = 2 ] || fail "a missing library should be bad usage"
grep -q 'cannot load it' "$WORK/missing.err" || fail "missing: $(cat "$WORK/missing.err")"
"$BIN/lockstep-server" --sim-lib "$BIN/libwalkers_no_entry.so" >/dev/null 2>"$WORK/noentry.err"; [ $? = 2 ] || fail "a library without the entry point should be bad usage"
grep -q 'not a lockstep module' "$WORK/noentry.err" || fail "no entry: $(cat "$WORK/noentry.err")"
# Untrusted library files: a truncated one would fault the loader (SIGBUS) if it were mapped, and
# one of another architecture would get the loader's "No such file"; each is refused with a sentence.
head -c 3000 "$LIB" >"$WORK/cut.so"
"$BIN/lockstep-synctest" --sim-lib "$WORK/cut.so" >/dev/null 2>"$WORK/cut.err"; rc=$?
[ $rc = 2 ] && grep -q 'truncated or damaged' "$WORK/cut.err" || fail "a truncated library: exit $rc, $(cat "$WORK/cut.err")"
if command -v aarch64-linux-gnu-gcc >/dev/null; then
  printf 'int lockstep_module;\n' >"$WORK/arm.c" && aarch64-linux-gnu-gcc -shared -fPIC "$WORK/arm.c" -o "$WORK/libarm.so"
  "$BIN/lockstep-server" --sim-lib "$WORK/libarm.so" >/dev/null 2>"$WORK/arm.err"; rc=$?
  [ $rc = 2 ] && grep -q 'built for aarch64, and this process is x86-64' "$WORK/arm.err" || fail "an aarch64 library: exit $rc, $(cat "$WORK/arm.err")"
fi
"$BIN/lockstep-replay" --sim-lib "$BIN/lockstep-replay" info /dev/null >/dev/null 2>"$WORK/exe.err"; [ $? = 2 ] || fail "an executable as a module should be exit 2"
"$BIN/lockstep-client" --sim-lib "$BIN/libwalkers_abi99.so" --connect 127.0.0.1:1 >/dev/null 2>"$WORK/abi.err"; [ $? = 2 ] || fail "another ABI version should be bad usage"
grep -q 'speaks module ABI version 99' "$WORK/abi.err" || fail "abi: $(cat "$WORK/abi.err")"
"$BIN/lockstep-server" --sim-lib "$LIB" --world colour=red >/dev/null 2>"$WORK/world.err"; [ $? = 2 ] || fail "a setting the module does not know should be bad usage"
grep -q "walkers has no world setting 'colour=red'" "$WORK/world.err" || fail "world: $(cat "$WORK/world.err")"
echo "PASS: a C module from --sim-lib hosted, joined, recorded and verified; other modules, missing files and ABIs refused"
