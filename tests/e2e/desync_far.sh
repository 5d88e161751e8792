#!/usr/bin/env bash
# Desyncs localized at any latency, and who is wrong by majority. A far player (250 ms +- 20 ms
# one way, 2 % loss, through lockstep-netsim) perturbs its state after tick 300: the server's and
# the client's state histories follow the round trip, so the report names entity and field like a
# near player's, and with two honest peers beside it names the far player as the odd one out.
# Then every client perturbs the same value at the same tick: the clients agree with each other,
# and the reports name the server as the odd one out. Both sessions report (exit 3 at the end).
source "$(dirname "$0")/lib.sh" "$1"
E2E_TIMEOUT=150
session() {  # session NAME INJECT_FAR INJECT_NEAR
  local dir="$WORK/$1" port relay
  mkdir -p "$dir"
  port=$((PORT + 10 * ${SESSIONS:-0})); SESSIONS=$((${SESSIONS:-0} + 1)); relay=$((port + 1))
  "$BIN/lockstep-server" --port "$port" --players 3 --ticks 900 --on-desync report --desync-dir "$dir" \
      --summary "$dir/server.json" 2>"$dir/server.err" &
  local s=$!; PIDS+=($s)
  "$BIN/lockstep-netsim" --listen "$relay" --forward "127.0.0.1:$port" --delay 250 --jitter 20 --loss 2 --seed 7 \
      --summary "$dir/relay.json" 2>"$dir/relay.err" &
  local r=$!; PIDS+=($r)
  sleep 0.2
  "$BIN/lockstep-client" --connect "127.0.0.1:$relay" --name far --bot 1 $2 --summary "$dir/far.json" 2>"$dir/far.err" >/dev/null &
  local a=$!; PIDS+=($a)
  "$BIN/lockstep-client" --connect "127.0.0.1:$port" --name near1 --bot 2 $3 --summary "$dir/near1.json" 2>"$dir/near1.err" >/dev/null &
  local b=$!; PIDS+=($b)
  "$BIN/lockstep-client" --connect "127.0.0.1:$port" --name near2 --bot 3 $3 --summary "$dir/near2.json" 2>"$dir/near2.err" >/dev/null &
  local c=$!; PIDS+=($c)
  expect_exit $s 3 "$1 server"
  wait $a $b $c
  kill $r 2>/dev/null
}
session one "--inject-desync-at 300" ""
R=$(ls "$WORK"/one/desync-300-*.json 2>/dev/null | head -1)
[ -n "$R" ] || fail "no report of tick 300: $(ls "$WORK/one")"
json_check "$R" 'd["name"] == "far" and d["where"] == "entity" and d["field"] is not None' "the far player's desync was not localized"
json_check "$R" 'd["odd_one_out"] is not None and d["odd_one_out"].endswith("(far)") and len(d["votes"]) == 2' "the far player is not the odd one out"
# The history holds 5 round trips and 0.5 s (history_for_round_trip): 300 ticks at the path's mean
# round trip of 500 ms, 280 at its least (460 ms, jitter taken off both ways); the default is 64.
json_check "$WORK/one/server.json" 'd["state_history_ticks"] >= 280' "the server's history did not follow the round trip"
echo "ok: a far player's desync at 250 ms one way localized to $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["entity"], d["field"], "; odd one out:", d["odd_one_out"])' "$R")"
session two "--inject-desync-at 300" "--inject-desync-at 300"
n=0
for R in "$WORK"/two/desync-300-*.json; do
  [ -f "$R" ] || continue
  n=$((n + 1))
  json_check "$R" 'd["odd_one_out"] == "server"' "the server should be the odd one out"
done
[ $n -ge 1 ] || fail "no report of tick 300 in the second session: $(ls "$WORK/two")"
echo "PASS: localized at 250 ms one way; the odd one out named by majority, the server included ($n reports)"
