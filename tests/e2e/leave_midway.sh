#!/usr/bin/env bash
# A client leaves at tick 200 of 600; the server and the other client reach 600 with equal hashes.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 600 --hash-log "$WORK/server.log" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot stays 1; A=$BOT_PID
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name quits --bot 2 --ticks 200 --hash-log "$WORK/quits.log" >/dev/null 2>"$WORK/quits.err" &
Q=$!; PIDS+=($Q)
expect_exit $Q 0 quitter
expect_exit $A 0 stayer
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/stays.log" || fail "hash logs differ"
[ "$(tail -n1 "$WORK/server.log" | cut -d' ' -f1)" = 600 ] || fail "server did not reach tick 600"
head -n 200 "$WORK/server.log" | cmp - "$WORK/quits.log" || fail "the quitter's first 200 ticks differ"
json_check "$WORK/server.json" '[(x["name"], x["reason"]) for x in d["departures"]] == [("quits", "left (reached its last tick)")] and d["departures"][0]["tick"] > 200' "the server did not see a clean leave"
echo "PASS: session went on after a player left at tick 200"
