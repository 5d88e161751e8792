#!/usr/bin/env bash
# Render rate never changes the simulation: clients at --fps 17, 60, 144 and 0 (uncapped) run
# the accumulator frame loop and must write hash logs identical to the server's.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 4 --ticks 600 --hash-log "$WORK/server.log" >/dev/null 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
C=()
for f in 17 60 144 0; do
  "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name "fps$f" --bot "$f" --fps "$f" --hash-log "$WORK/fps$f.log" >/dev/null 2>"$WORK/fps$f.err" &
  C+=($!); PIDS+=($!)
done
for i in 0 1 2 3; do expect_exit "${C[$i]}" 0 "client $i"; done
expect_exit $S 0 server
for f in 17 60 144 0; do cmp "$WORK/server.log" "$WORK/fps$f.log" || fail "--fps $f hash log differs"; done
[ "$(wc -l <"$WORK/server.log")" = 600 ] || fail "server log length"
echo "PASS: identical hash logs at 17, 60, 144 fps and uncapped"
