#!/usr/bin/env bash
# A server without the game's rules (lockstep-server --relay): it knows the walkers game only by
# the description lockstep-synctest --describe prints. Two sessions side by side:
# 1. Three players whose rules live in the player alone: a C game and a Python game on the C
#    session API, owning their state, and a stock client (the module), each through its own
#    lockstep-netsim relay at 80 ms +- 10 ms one way with 3 % loss; a fourth stock client joins
#    straight (lowest round trip, so asked first for a state) and answers every state request
#    with a changed byte. The C game flips a bit at tick 300: the majority names it, it localizes
#    the difference by its own callbacks against the majority's state (to the entity and field),
#    the forged state is caught and another peer's forwarded, and the C game plays on resynced. Then the C
#    game is killed and rejoins from a peer's state. Every settled hash equals every honest
#    player's, to the last tick.
#    The two games report the match's result, two of the four seats: disputed (a claim settles only
#    with more than half of all the seats), with both claims in it, authenticated, posted to a
#    backend's endpoint (tried again after a 500), verified, and refused once a byte is changed.
# 2. A 1v1 through netsim with one side perturbed: no strict majority, both reported, nobody
#    resynced; its result webhook's endpoint hangs and the session is none the worse.
source "$(dirname "$0")/lib.sh" "$1"
E2E_TIMEOUT=110
walkers_games
"$BIN/lockstep-synctest" --sim-lib "$LIB" --describe >"$WORK/game.json" 2>"$WORK/describe.err" || fail "synctest --describe failed"
json_check "$WORK/game.json" 'd["format"] == "lockstep-game/1" and d["name"] == "walkers" and len(d["join_fingerprint"]) == 16' \
  "the description lacks the game's identity"
# The relay server refuses a module's options beside --relay, and a description it cannot read.
"$BIN/lockstep-server" --relay "$WORK/game.json" --sim-lib "$LIB" --port "$PORT" >/dev/null 2>"$WORK/usage.err"
[ $? = 2 ] || fail "--relay with --sim-lib was not a usage error"
echo '{"format": "lockstep-game/1", "input_size": 99}' >"$WORK/bad.json"
"$BIN/lockstep-server" --relay "$WORK/bad.json" --port "$PORT" >/dev/null 2>"$WORK/bad.err"
[ $? = 2 ] && grep -q "input_size" "$WORK/bad.err" || fail "a bad description was not refused naming its field: $(cat "$WORK/bad.err")"

# The session's result goes to a backend's endpoint (which fails the first try), authenticated
# with a result key the backend holds.
"$BIN/lockstep-token" keygen -o "$WORK/result.key" || fail "lockstep-token keygen failed"
python3 "$(dirname "$0")/result_receiver.py" $((PORT + 15)) "$WORK" 2>"$WORK/receiver.err" &
PIDS+=($!)
"$BIN/lockstep-server" --relay "$WORK/game.json" --port "$PORT" --players 4 --ticks 1500 --on-desync resync \
    --desync-dir "$WORK" --hash-log "$WORK/server.log" --summary "$WORK/server.json" --result "$WORK/result.json" \
    --result-key "$WORK/result.key" --result-webhook "http://127.0.0.1:$((PORT + 15))/results" \
    --record "$WORK/session.replay" --keyframe-every 2 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
for i in 1 2 3; do
  "$BIN/lockstep-netsim" --listen $((PORT + i)) --forward "127.0.0.1:$PORT" --delay 80 --jitter 10 --loss 3 --seed $i \
      2>"$WORK/netsim$i.err" &
  PIDS+=($!)
done
# Session 2: the 1v1.
mkdir -p "$WORK/duel"
# Its webhook's endpoint takes the connection and never answers: each try times out, is logged,
# and the session is none the worse.
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
held = []
while True: held.append(s.accept()[0])
' $((PORT + 16)) 2>"$WORK/hang.err" &
PIDS+=($!)
"$BIN/lockstep-server" --relay "$WORK/game.json" --port $((PORT + 10)) --players 2 --ticks 500 --on-desync resync \
    --desync-dir "$WORK/duel" --hash-log "$WORK/duel/server.log" --summary "$WORK/duel/server.json" \
    --result-webhook "http://127.0.0.1:$((PORT + 16))/hangs" --result-webhook-timeout-ms 300 2>"$WORK/duel.err" &
D=$!; PIDS+=($D)
"$BIN/lockstep-netsim" --listen $((PORT + 11)) --forward "127.0.0.1:$((PORT + 10))" --delay 80 --jitter 10 --loss 3 --seed 7 \
    2>"$WORK/netsim-duel.err" &
PIDS+=($!)
sleep 0.3
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$((PORT + 1))" --name bot --bot 1 --hash-log "$WORK/bot.log" \
    >/dev/null 2>"$WORK/bot.err" &
B=$!; PIDS+=($B)
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$PORT" --name forger --bot 4 --inject-forged-states \
    --hash-log "$WORK/forger.log" >/dev/null 2>"$WORK/forger.err" &
F=$!; PIDS+=($F)
"$BIN/lockstep-c-player" 127.0.0.1 $((PORT + 2)) cgame 2 "$WORK/c1.log" --perturb-at 300 --secret-file "$WORK/secret" \
    2>"$WORK/c1.err" &
C1=$!; PIDS+=($C1)
start_py_game $((PORT + 3))
P=$PY_PID
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$((PORT + 11))" --name left --bot 5 --hash-log "$WORK/duel/left.log" \
    >/dev/null 2>"$WORK/duel/left.err" &
L=$!; PIDS+=($L)
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$((PORT + 10))" --name right --bot 6 --inject-desync-at 200 \
    --hash-log "$WORK/duel/right.log" >/dev/null 2>"$WORK/duel/right.err" &
R=$!; PIDS+=($R)
rejoin_c_game $C1 $((PORT + 2))
C2=$C2_PID
expect_exit $C2 0 "the rejoined C game"
expect_exit $P 0 "the Python game"
expect_exit $B 0 bot
expect_exit $F 0 "the forging client"
expect_exit $S 3 "relay server"  # a desync happened (and was repaired)
[ "$(tail -n1 "$WORK/server.log" | cut -d' ' -f1)" = 1500 ] || fail "the relay did not settle tick 1500"
[ "$(wc -l <"$WORK/server.log")" = 1500 ] || fail "the relay did not settle every tick: $(wc -l <"$WORK/server.log") lines"
cmp "$WORK/server.log" "$WORK/bot.log" || fail "the stock client's hashes differ from the settled ones"
cmp "$WORK/server.log" "$WORK/forger.log" || fail "the forging client's own hashes differ from the settled ones"
cmp "$WORK/server.log" "$WORK/py.log" || fail "the Python game's hashes differ from the settled ones"
resynced=$(grep -o "c_player: event 6 tick [0-9]*" "$WORK/c1.err" | head -1 | awk '{print $5}')
[ -n "$resynced" ] || fail "the C game was never resynced (no RESYNCED event)"
awk '{last[$1] = $0} END {for (t in last) print last[t]}' "$WORK/c1.log" | sort -n >"$WORK/c1.last"
for t in $(grep -Fxv -f "$WORK/server.log" "$WORK/c1.last" | cut -d' ' -f1); do
  [ "$t" -ge 300 ] && [ "$t" -le "$resynced" ] || fail "the C game differs at tick $t, outside its divergence (300 to $resynced)"
done
grep -Fxv -f "$WORK/server.log" "$WORK/c2.log" | head -3 | grep -q . && fail "the rejoined C game's hashes differ"
[ "$(tail -n1 "$WORK/c2.log" | cut -d' ' -f1)" = 1500 ] || fail "the rejoined C game did not reach 1500"
json_check "$WORK/server.json" 'd["relay"]["ticks_settled"] == 1500 and d["relay"]["ticks_split"] == 0 and d["resyncs"] >= 1' \
  "not every tick settled, or no resync"
json_check "$WORK/server.json" 'd["joins_running"] == 1 and d["verified"] == 1 and d["join_mismatches"] == 0' \
  "the rejoin was not served and verified"
json_check "$WORK/server.json" 'd["relay"]["states"]["forged"] >= 1 and d["relay"]["states"]["forwarded"] >= 2' \
  "the forged state was not caught, or the states were not forwarded from another peer"
grep -q "forger) sent a wrong state" "$WORK/server.err" || fail "the server did not name the forging peer"
forged=$(grep -l '"where": *"forged state"' "$WORK"/desync-*.json 2>/dev/null | head -1)
[ -n "$forged" ] || fail "no report file for the forged state"
json_check "$forged" '"forger" in d["odd_one_out"] and "not the settled one" in d["note"]' "the forged state's report does not name the forger"
# Keyframes from the voters every 2 s, each checked against the settled hash: the rejoin was
# served from the latest one, no peer asked; the recording holds them and verifies from one.
json_check "$WORK/server.json" 'd["relay"]["states"]["keyframes"] >= 4 and d["relay"]["states"]["joins_from_keyframe"] == 1' \
  "no keyframes from the voters, or the rejoin was not served from one"
grep -q "from the latest keyframe" "$WORK/server.err" || fail "the server does not say the rejoin came from its keyframe"
json_check <("$BIN/lockstep-replay" --sim-lib "$LIB" info "$WORK/session.replay") 'd["keyframes"] >= 4 and d["keyframe_interval"] == 200' \
  "the relay's recording has no keyframes"
"$BIN/lockstep-replay" --sim-lib "$LIB" verify "$WORK/session.replay" --from 1000 >"$WORK/verify.txt" 2>&1 \
  || fail "the relay's recording does not verify from a keyframe: $(tail -3 "$WORK/verify.txt")"
"$BIN/lockstep-replay" --sim-lib "$LIB" view "$(json_get "$WORK/$(ls "$WORK" | grep -m1 '^desync-300-.*json$')" 'd["bundle"]')" \
  -o "$WORK/relay.html" >/dev/null 2>"$WORK/relay-view.err" || fail "the relay's desync bundle has no page: $(cat "$WORK/relay-view.err")"
# Every command its page offers runs: the relay's bundle holds no start state to re-simulate from,
# only the parties' stored states.
page_commands "$WORK/relay.html" "$LIB"
RP=$(ls "$WORK"/desync-300-*.json 2>/dev/null | head -1)
[ -n "$RP" ] || fail "no desync report of tick 300: $(ls "$WORK")"
json_check "$RP" 'd["name"] == "cgame" and "cgame" in d["odd_one_out"] and len(d["votes"]) == 2' \
  "the report does not name the C game as the odd one out by majority"
# Localized without the rules on the server: by the C game's own callbacks against the majority's
# state, to the entity and field, with the first differing byte.
json_check "$RP" 'd["where"] == "entity" and d["field"] == "vel" and "first differ at byte" in d["note"]' \
  "the report does not name the C game's entity and field"

# The result: the C and the Python game reported the same bytes, two seats of four, so disputed with
# both claims and no bytes chosen (PROTOCOL.md §16); posted to the
# endpoint (after a 500), written to --result and put in the summary; authentic by the CLI and by
# the C function, and not once one byte is changed.
[ -s "$WORK/posted.json" ] || fail "the result was not posted to the webhook: $(grep webhook "$WORK/server.err")"
[ "$(cat "$WORK/posts.count")" = 2 ] || fail "the webhook was not tried again after its 500 ($(cat "$WORK/posts.count") posts)"
json_check "$WORK/posted.json" 'd["format"] == "lockstep-result/4" and d["disputed"] and d["result"] == "" and d["relay"] and d["ticks"] == 1500' \
  "the posted result is not disputed with two claims of four seats"
json_check "$WORK/posted.json" 'sorted(s["name"] for s in d["seats"] if s["reported"] and len(s["claim"]) == 16 and s["present"] and not s["agreed"]) == ["cgame", "pygame"] and len({s["claim"] for s in d["seats"] if s["reported"]}) == 1' \
  "the result does not carry the two games' claims"
[ "$(json_get "$WORK/result.json" 'd["mac"]')" = "$(json_get "$WORK/posted.json" 'd["mac"]')" ] || fail "--result differs from the posted result"
json_check "$WORK/server.json" 'd["result"]["mac"] is not None and d["result"]["final_hash"] == d["final_hash"]' \
  "the summary's result is unsigned or its final hash is not the settled one"
"$BIN/lockstep-token" verify-result --result-key --key "$WORK/result.key" "$WORK/posted.json" >"$WORK/verify.out" 2>&1 ||
  fail "lockstep-token verify-result refused the posted result: $(cat "$WORK/verify.out")"
sed 's/"disputed":true/"disputed":false/' "$WORK/posted.json" >"$WORK/tampered.json"
cmp -s "$WORK/posted.json" "$WORK/tampered.json" && fail "the tampering did not change the result"
"$BIN/lockstep-token" verify-result --result-key --key "$WORK/result.key" "$WORK/tampered.json" >/dev/null 2>&1
[ $? = 3 ] || fail "lockstep-token verify-result took a changed result"
py_with_lib - "$LIBDIR" "$WORK" <<'PY' || fail "lockstep_result_verify (C) did not tell the result from the changed one"
import ctypes, pathlib, sys
lib = ctypes.CDLL(sys.argv[1] + "/liblockstep_net.so")
lib.lockstep_result_verify.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int]
work = pathlib.Path(sys.argv[2])
key = bytes.fromhex(work.joinpath("result.key").read_text().strip())
good, bad = work.joinpath("posted.json").read_bytes(), work.joinpath("tampered.json").read_bytes()
assert lib.lockstep_result_verify(good, len(good), key, 1) == 0
assert lib.lockstep_result_verify(bad, len(bad), key, 1) != 0
PY

# The 1v1: both sides reported, nobody resynced, and the session played to its end.
expect_exit $L 3 "duel: left (told it is one side of a split)"
expect_exit $R 3 "duel: right (told it is one side of a split)"
expect_exit $D 3 "duel: relay server"
json_check "$WORK/duel/server.json" 'd["resyncs"] == 0 and len(d["desyncs"]) == 2 and d["relay"]["ticks_split"] > 0' \
  "duel: not both sides reported, or someone was resynced"
[ "$(ls "$WORK"/duel/desync-*.json | wc -l)" = 2 ] || fail "duel: not two reports: $(ls "$WORK/duel")"
grep -q "result webhook: the session's result was not delivered" "$WORK/duel.err" || fail "duel: the hanging webhook was not logged"
[ "$(grep -c "result webhook: try . of 4 .*failed: Timeout" "$WORK/duel.err")" = 4 ] || fail "duel: the webhook was not tried 4 times with a timeout: $(grep webhook "$WORK/duel.err")"
for f in "$WORK"/duel/desync-*.json; do
  json_check "$f" 'd["odd_one_out"] is None and len(d["votes"]) == 2' "duel: a report names an odd one out without a majority"
done
echo "relay: $(json_get "$WORK/server.json" 'd["relay"]')"
echo "PASS: a relay server without the rules: 1500 ticks settled by majority; a C, a Python and a stock player hash-equal at 80 ms with 3 % loss; the odd one named and resynced from a peer past a forged state; a rejoin from a peer; a 1v1 split reported on both sides, nobody resynced"
