#!/usr/bin/env bash
# The frame rate never sets the simulation's pace: clients drawing at 1, 2 and 5 fps and one
# uncapped play a 1500-tick session; each must execute and hash every tick the server executed
# (complete hash logs, equal to the server's), with its inputs sampled and sent on the tick clock:
# at most 1 % of them filled for lateness. A client whose frame rate paced its inputs would have
# most of them filled (99 % at 1 fps); a busy machine that holds a process back for longer than
# its input lead fills a few of any client's, the uncapped one's too.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 4 --ticks 1500 --hash-log "$WORK/server.log" \
    --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
C=()
for f in 1 2 5 0; do
  start_bot "fps$f" "$((f + 1))" --fps "$f" --summary "$WORK/fps$f.json"
  C+=($BOT_PID)
done
for i in 0 1 2 3; do expect_exit "${C[$i]}" 0 "client $i"; done
expect_exit $S 0 server
[ "$(wc -l <"$WORK/server.log")" = 1500 ] || fail "server log has $(wc -l <"$WORK/server.log") lines"
for f in 1 2 5 0; do
  cmp "$WORK/server.log" "$WORK/fps$f.log" || fail "--fps $f hash log differs from the server's or is incomplete"
  filled=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["inputs_filled"])' "$WORK/fps$f.json")
  [ "$filled" -le 15 ] || fail "--fps $f had $filled of 1500 inputs filled (more than 1 %)"
  echo "fps $f: $filled inputs filled, $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("latency p50", d["latency_us"]["p50"], "us, p99", d["latency_us"]["p99"], "us, frames", d["frames"])' "$WORK/fps$f.json")"
done
echo "PASS: complete, identical hash logs at 1, 2, 5 fps and uncapped; at most 1 % of inputs filled"
