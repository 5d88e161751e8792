#!/usr/bin/env bash
# Games that embed lockstep through the C session API alone, each owning its state (mode b): a C
# program (lockstep-c-player) and a Python program (tests/embed/py_player.py, ctypes), both
# walkers worlds they step themselves, play beside a stock bot, each through its own
# lockstep-netsim relay at 80 ms +- 10 ms one way with 3 % loss. The C game flips a bit of its
# own state after tick 300: the server localizes it through the game's field callbacks and
# resyncs it through its load callback. Then the C game is killed and comes back with its rejoin
# secret (a snapshot loaded by the game, verified). Everyone's hashes equal the server's outside
# the divergence, to the last tick. The C game's first run is built against API version 2's
# headers (lockstep-c-player-v2, tests/embed/api_v2): its smaller config and stats work on today's
# library, the fields it lacks at their defaults; its rejoin is today's build, on lockstep's service
# thread, its state under a lock of its own taken in the documented order.
source "$(dirname "$0")/lib.sh" "$1"
E2E_TIMEOUT=110
walkers_games
"$BIN/lockstep-server" --sim-lib "$LIB" --port "$PORT" --players 3 --ticks 1500 --on-desync resync --desync-dir "$WORK" \
    --hash-log "$WORK/server.log" --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
for i in 1 2 3; do
  "$BIN/lockstep-netsim" --listen $((PORT + i)) --forward "127.0.0.1:$PORT" --delay 80 --jitter 10 --loss 3 --seed $i \
      --summary "$WORK/relay$i.json" 2>"$WORK/relay$i.err" &
  PIDS+=($!)
done
sleep 0.3
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$((PORT + 1))" --name bot --bot 1 --hash-log "$WORK/bot.log" \
    >/dev/null 2>"$WORK/bot.err" &
B=$!; PIDS+=($B)
"$BIN/lockstep-c-player-v2" 127.0.0.1 $((PORT + 2)) cgame 2 "$WORK/c1.log" --perturb-at 300 --secret-file "$WORK/secret" \
    2>"$WORK/c1.err" &
C1=$!; PIDS+=($C1)
start_py_game $((PORT + 3))
P=$PY_PID
rejoin_c_game $C1 $((PORT + 2)) --service 1
C2=$C2_PID
expect_exit $C2 0 "the rejoined C game"
expect_exit $P 0 "the Python game"
expect_exit $B 0 bot
expect_exit $S 3 server  # a desync happened (and was repaired)
cmp "$WORK/server.log" "$WORK/bot.log" || fail "the bot's hashes differ"
[ "$(tail -n1 "$WORK/server.log" | cut -d' ' -f1)" = 1500 ] || fail "the session did not reach 1500"
grep -Fxv -f "$WORK/server.log" "$WORK/py.log" | head -3 | grep -q . && fail "the Python game's hashes differ: $(grep -Fxv -f "$WORK/server.log" "$WORK/py.log" | head -3)"
[ "$(tail -n1 "$WORK/py.log" | cut -d' ' -f1)" = 1500 ] || fail "the Python game did not reach 1500"
# The C game: different only from its perturbation to the tick of the state it was resynced to
# (its RESYNCED event), then equal again. Ticks it had executed past that state run again after
# the resync: the last line of each tick is what it ended with.
grep -q "c_player: built against LOCKSTEP_API_VERSION 2 (config 144 bytes, stats 176 bytes), linked 4" "$WORK/c1.err" ||
  fail "the first C game is not API version 2's on today's library: $(grep 'built against' "$WORK/c1.err")"
resynced=$(grep -o "c_player: event 6 tick [0-9]*" "$WORK/c1.err" | head -1 | awk '{print $5}')
[ -n "$resynced" ] || fail "the C game was never resynced (no RESYNCED event)"
awk '{last[$1] = $0} END {for (t in last) print last[t]}' "$WORK/c1.log" | sort -n >"$WORK/c1.last"
bad=$(grep -Fxv -f "$WORK/server.log" "$WORK/c1.last" | cut -d' ' -f1)
[ -n "$bad" ] || fail "the C game's perturbation did not change its hashes"
for t in $bad; do
  [ "$t" -ge 300 ] && [ "$t" -le "$resynced" ] || fail "the C game differs at tick $t, outside its divergence (300 to the resync's $resynced)"
done
[ "$(tail -n1 "$WORK/c1.log" | cut -d' ' -f1)" -gt $((resynced + 100)) ] || fail "the C game did not play on after its resync"
grep -Fxv -f "$WORK/server.log" "$WORK/c2.log" | head -3 | grep -q . && fail "the rejoined C game's hashes differ"
[ "$(tail -n1 "$WORK/c2.log" | cut -d' ' -f1)" = 1500 ] || fail "the rejoined C game did not reach 1500"
json_check "$WORK/server.json" 'd["resyncs"] >= 1 and d["joins_running"] == 1 and d["verified"] == 1 and d["join_mismatches"] == 0' \
  "no resync, or the rejoin was not admitted and verified"
R=$(ls "$WORK"/desync-300-*.json 2>/dev/null | head -1)
[ -n "$R" ] || fail "no desync report of tick 300: $(ls "$WORK")"
json_check "$R" 'd["name"] == "cgame" and d["where"] == "entity" and d["field"] == "vel"' "the report does not name the C game's entity and field"
grep -q "event 1 " "$WORK/c2.err" && grep -q "event 2 \|event 8 " "$WORK/c2.err" || fail "the C game saw no joined or end events"
echo "c game:  $(tail -1 "$WORK/c2.err")"
echo "py game: $(tail -1 "$WORK/py.err")"
echo "PASS: a C and a Python game on the C session API, owning their state, hash-equal beside a bot at 80 ms with 3 % loss; a resync through the game's callbacks, a rejoin through its load"
