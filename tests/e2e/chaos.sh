#!/usr/bin/env bash
# Through the seeded chaos relay (10 % loss, 40 ms +- 20 ms delay, 2 % duplicates, 2 % reordering
# in both directions): 4 bot clients, 3000 ticks, zero desyncs, identical hash logs, and the
# session's simulated time within 10 % of wall time.
source "$(dirname "$0")/lib.sh" "$1"
TICKS=${CHAOS_TICKS:-3000}
RELAY=$((PORT + 1))
"$BIN/lockstep-server" --port "$PORT" --players 4 --ticks "$TICKS" --hash-log "$WORK/server.log" --on-desync stop \
    --desync-dir "$WORK" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
"$BIN/lockstep-netsim" --listen "$RELAY" --forward "127.0.0.1:$PORT" --loss 10 --delay 40 --jitter 20 \
    --duplicate 2 --reorder 2 --seed 42 --summary "$WORK/netsim.json" 2>"$WORK/netsim.err" &
N=$!; PIDS+=($N)
sleep 0.3
C=()
for i in 1 2 3 4; do
  "$BIN/lockstep-client" --connect "127.0.0.1:$RELAY" --name "bot$i" --bot "$i" --hash-log "$WORK/c$i.log" \
      --summary "$WORK/c$i.json" 2>"$WORK/c$i.err" &
  C+=($!); PIDS+=($!)
done
for i in 0 1 2 3; do expect_exit "${C[$i]}" 0 "client $((i + 1))"; done
expect_exit $S 0 server
kill -INT $N; wait $N
for i in 1 2 3 4; do cmp "$WORK/server.log" "$WORK/c$i.log" || fail "client $i hash log differs"; done
[ "$(wc -l <"$WORK/server.log")" = "$TICKS" ] || fail "server log has $(wc -l <"$WORK/server.log") ticks"
json_check "$WORK/server.json" 'd["desyncs"] == [] and d["divergent_ticks"] == 0' "desyncs reported"
tps=$(json_get "$WORK/server.json" 'd["ticks_per_second"]')
awk -v t="$tps" 'BEGIN { exit !(t >= 90 && t <= 110) }' || fail "simulated time drifted from wall time: $tps ticks/s"
json_check "$WORK/netsim.json" 'd["up"]["lost"] > 0 and d["down"]["lost"] > 0' "the relay injected no loss"
echo "relay: $(cat "$WORK/netsim.json")"
echo "server: $(cat "$WORK/server.json")"
for i in 1 2 3 4; do echo "client $i: $(cat "$WORK/c$i.json")"; done
echo "PASS: $TICKS ticks through the chaos relay at $tps ticks/s, identical hash logs, no desync"
