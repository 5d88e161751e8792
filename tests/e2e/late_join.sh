#!/usr/bin/env bash
# --allow-late-join: a player leaves at tick 200; a new player joins at about tick 500 into the
# vacated slot through a verified snapshot and keeps equal hashes to the end.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 1200 --bodies 10000 --allow-late-join \
    --hash-log "$WORK/server.log" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot host 1; H=$BOT_PID
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name early --bot 2 --ticks 200 >/dev/null 2>"$WORK/early.err" &
E=$!; PIDS+=($E)
expect_exit $E 0 "early leaver"
for i in $(seq 200); do [ "$(wc -l <"$WORK/host.log" 2>/dev/null || echo 0)" -ge 500 ] && break; sleep 0.05; done
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name late --bot 3 --hash-log "$WORK/late.log" \
    --summary "$WORK/late.json" 2>"$WORK/late.err" &
L=$!; PIDS+=($L)
expect_exit $L 0 "late joiner"
expect_exit $H 0 host
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/host.log" || fail "host hash log differs"
json_check "$WORK/server.json" 'd["joins_running"] == 1 and d["verified"] == 1' "the late joiner was not admitted and verified"
joined=$(json_get "$WORK/late.json" 'd["joined_at"]')
[ "$joined" -ge 480 ] || fail "joined_at $joined"
grep -Fxv -f "$WORK/server.log" "$WORK/late.log" | head -3 | grep -q . && fail "late joiner's hashes differ"
[ "$(tail -n1 "$WORK/late.log" | cut -d' ' -f1)" = 1200 ] || fail "late joiner did not reach the end"
echo "snapshot: $(grep -o 'loaded the session.s state.*' "$WORK/late.err")"
echo "PASS: late joiner at tick $joined verified, equal hashes to the end"
