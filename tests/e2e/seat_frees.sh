#!/usr/bin/env bash
# A crashed player's seat frees in seconds: a bot is killed with SIGKILL at tick 300 of a running
# 3-player session with --allow-late-join; a newcomer that asks for a seat from that moment on
# (refused while the seat is held, then asking again every 0.25 s) gets it once the play silence
# (--play-silence-ms, 5 s by default) has dropped the dead player, not once the transport closes
# its connection (about 30 s later), and plays to the end hash-equal.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 3 --ticks 2500 --bodies 50 --allow-late-join \
    --hash-log "$WORK/server.log" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot one 1; A=$BOT_PID
start_bot two 2; B=$BOT_PID
start_bot victim 3; V=$BOT_PID
for _ in $(seq 400); do [ "$(wc -l <"$WORK/one.log" 2>/dev/null || echo 0)" -ge 300 ] && break; sleep 0.05; done
kill -9 "$V"
killed=$(date +%s%N)
admitted=0 tries=0
while [ "$admitted" = 0 ] && [ $(( ($(date +%s%N) - killed) / 1000000 )) -lt 20000 ]; do
  tries=$((tries + 1))
  "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name newcomer --bot 4 --hash-log "$WORK/newcomer.log" \
      >/dev/null 2>"$WORK/newcomer.err" &
  N=$!
  for _ in $(seq 100); do  # a refusal comes within a round trip; a welcome names the slot
    grep -q "joined as player" "$WORK/newcomer.err" && { admitted=$(date +%s%N); break; }
    kill -0 "$N" 2>/dev/null || break
    sleep 0.02
  done
  if [ "$admitted" = 0 ]; then
    wait "$N" 2>/dev/null
    grep -q "player slots are taken" "$WORK/newcomer.err" || fail "the newcomer was not refused for a taken seat: $(tail -n 3 "$WORK/newcomer.err")"
    sleep 0.25
  fi
done
[ "$admitted" != 0 ] || fail "no seat for the newcomer in 20 s after the crash ($tries tries)"
PIDS+=($N)
freed_ms=$(( (admitted - killed) / 1000000 ))
echo "seat free for a late joiner $freed_ms ms after kill -9 ($tries tries)"
[ "$freed_ms" -lt 10000 ] || fail "the crashed player's seat took $freed_ms ms to free"
expect_exit "$N" 0 newcomer
expect_exit "$A" 0 one
expect_exit "$B" 0 two
expect_exit "$S" 0 server
grep -q "victim.*silent for 5000 ms" "$WORK/server.err" || fail "the victim was not dropped for its play silence"
cmp "$WORK/server.log" "$WORK/one.log" || fail "one's hash log differs"
grep -Fxv -f "$WORK/server.log" "$WORK/newcomer.log" | head -3 | grep -q . && fail "the newcomer's hashes differ"
[ "$(tail -n1 "$WORK/newcomer.log" | cut -d' ' -f1)" = 2500 ] || fail "the newcomer did not reach the end"
echo "PASS: a crashed player's seat went to a late joiner $freed_ms ms after kill -9"
