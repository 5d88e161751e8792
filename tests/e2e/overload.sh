#!/usr/bin/env bash
# A server with far too many bodies for 100 Hz: it never spirals. It says it cannot keep up,
# slows the session clock instead of piling up catch-up steps, and the clients follow without desync.
# Three processes each stepping 600 000 bodies on two cores starve one another for seconds at a
# time: a client can go 5 s without a message reaching the server. Liveness has its own tests
# (server_gone, leave_midway, rejoin); here the silence bounds are 20 s, so what is measured is the
# clock, not the scheduler.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 150 --bodies 600000 --hash-log "$WORK/server.log" \
    --silent-drop-ms 20000 --hash-silence-ms 20000 \
    >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot a 1; A=$BOT_PID
start_bot b 2; B=$BOT_PID
expect_exit $A 0 a
expect_exit $B 0 b
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/a.log" && cmp "$WORK/server.log" "$WORK/b.log" || fail "hash logs differ"
json_check "$WORK/server.json" 'd["ticks_skipped"] > 0' "the server did not move its clock though it cannot keep up"
tps=$(json_get "$WORK/server.json" 'd["ticks_per_second"]')
echo "overloaded session ran at $tps ticks/s: $(grep -m1 'cannot keep up' "$WORK/server.err")"
echo "PASS: overloaded server slowed down without spiralling; clients in sync"
