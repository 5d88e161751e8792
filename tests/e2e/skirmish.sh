#!/usr/bin/env bash
# The skirmish (an RTS in integers, driven only by commands) with the stock executables: three
# bot players at 0, 60 and 150 ms one way with jitter and loss stay in sync to the bit and their
# commands reach every peer; the recording verifies with the module the replay names; a one-bit
# divergence is localized to its unit and field; a client of another module and bad settings are
# refused.
source "$(dirname "$0")/lib.sh" "$1"
printf '# the world, from a file (--world @FILE)\nunits=200\nseed=3\n' >"$WORK/world.txt"
NET_SERVER_ARGS="--sim skirmish --world @$WORK/world.txt --record $WORK/skirmish.replay" \
NET_CLIENT_ARGS="--sim skirmish" \
  net_session skirmish 1500 "0 0 0" "60 10 2" "150 20 5"
json_check "$WORK/skirmish/server.json" 'd["commands"] > 20 and d["desyncs"] == []' "the bots' commands did not reach the server"
for c in 1 2 3; do
  json_check "$WORK/skirmish/c$c.json" 'd["commands_sent"] > 5' "client $c sent no commands"
done
"$BIN/lockstep-replay" verify "$WORK/skirmish.replay" >"$WORK/verify.out" 2>&1 || fail "verify: $(cat "$WORK/verify.out")"
grep -q '^OK 1500 ticks verified (skirmish seed=3,units=200,map=128,rocks=6, 3 players)' "$WORK/verify.out" \
  || fail "verify: $(cat "$WORK/verify.out")"
"$BIN/lockstep-replay" info "$WORK/skirmish.replay" >"$WORK/info.json" || fail "info"
json_check "$WORK/info.json" 'd["sim"] == "skirmish" and d["input_size"] == 0 and d["commands"] > 20' "info"
"$BIN/lockstep-replay" --sim arena verify "$WORK/skirmish.replay" >/dev/null 2>"$WORK/wrong.err" && fail "the arena verified a skirmish replay"

# A desync: 2 players x 200 units; the default perturbation (selector 12345) flips unit
# 12345 mod 400 = 345, field (12345 / 400) mod 12 = 6 (hp).
"$BIN/lockstep-server" --sim skirmish --port "$PORT" --players 2 --ticks 800 --on-desync stop --desync-dir "$WORK" \
    >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
# A client of the arena has another fingerprint: refused while the lobby waits.
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name other >"$WORK/other.json" 2>"$WORK/other.err"
[ $? = 4 ] || fail "a client of another module should be refused (exit 4)"
json_check "$WORK/other.json" 'd["refused"] == "WrongFingerprint"' "a client of another module was not refused for its fingerprint"
start_bot honest 1 --sim skirmish; H=$BOT_PID
start_bot cheat 2 --sim skirmish --inject-desync-at 300; C=$BOT_PID
expect_exit $S 3 server
wait $H; wait $C
R="$(ls "$WORK"/desync-300-*.json 2>/dev/null | head -1)"
[ -n "$R" ] || fail "no desync-300-<player>.json report"
json_check "$R" 'd["where"] == "entity" and d["entity"] == 345 and d["field"] == "hp"' "report names the wrong unit or field"

# Bad settings are bad usage, with the module's sentence.
"$BIN/lockstep-server" --sim skirmish --world @"$WORK/missing.txt" >/dev/null 2>"$WORK/nofile.err"; [ $? = 2 ] || fail "a missing settings file should be bad usage"
grep -q "cannot read the world settings file" "$WORK/nofile.err" || fail "no file: $(cat "$WORK/nofile.err")"
"$BIN/lockstep-server" --sim skirmish --world units=0 >/dev/null 2>"$WORK/units.err"; [ $? = 2 ] || fail "units=0 should be bad usage"
grep -q "units must be a whole number from 1" "$WORK/units.err" || fail "units: $(cat "$WORK/units.err")"
"$BIN/lockstep-server" --sim skirmish --players 8 --world units=3000 >/dev/null 2>"$WORK/many.err"; [ $? = 2 ] || fail "24000 units should be bad usage"
grep -q "20000 units in all" "$WORK/many.err" || fail "many: $(cat "$WORK/many.err")"
echo "PASS: a skirmish over 0/60/150 ms stays in sync with its commands, verifies, localizes unit 345 hp, refuses the rest"
