#!/usr/bin/env bash
# Prediction never touches what is checked: a client drawing a predicted world (--predict 64)
# beside one in plain lockstep, each through its own lockstep-netsim relay with loss, keeps a
# hash log equal to the server's at 0, 80 and 200 ms one way, in the arena, the skirmish and a
# module from a shared library (walkers); and its own input reaches the screen within a tick and
# a frame at 80 ms one way, where the lockstep client's takes a round trip.
source "$(dirname "$0")/lib.sh" "$1"
E2E_TIMEOUT=230
n=0
for game in "arena|bodies=200" "skirmish|units=40,map=48" "lib|seed=3"; do
  name=${game%%|*}; world=${game##*|}
  if [ "$name" = lib ]; then sim="--sim-lib $BIN/libwalkers.so"; else sim="--sim $name"; fi
  for delay in 0 80 200; do
    n=$((n + 1)); dir="$WORK/s$n"; mkdir -p "$dir"; port=$((PORT + (n % 4) * 4))
    "$BIN/lockstep-server" $sim --world "$world" --port $port --players 2 --ticks 500 --hash-log "$dir/server.log" >/dev/null 2>"$dir/server.err" &
    S=$!; PIDS+=($S)
    for i in 1 2; do
      "$BIN/lockstep-netsim" --listen $((port + i)) --forward "127.0.0.1:$port" --delay $delay --jitter $((delay / 8)) \
          --loss 3 --seed $i --duration 40 >/dev/null 2>"$dir/relay$i.err" &
      PIDS+=($!)
    done
    sleep 0.2
    "$BIN/lockstep-client" $sim --connect "127.0.0.1:$((port + 1))" --name predicting --bot 1 --predict 64 --render none --fps 60 \
        --hash-log "$dir/p.log" --summary "$dir/p.json" 2>"$dir/p.err" >/dev/null &
    P=$!; PIDS+=($P)
    "$BIN/lockstep-client" $sim --connect "127.0.0.1:$((port + 2))" --name lockstep --bot 2 --render none --fps 60 \
        --hash-log "$dir/l.log" --summary "$dir/l.json" 2>"$dir/l.err" >/dev/null &
    L=$!; PIDS+=($L)
    expect_exit $P 0 "predicting client ($sim, $delay ms)"
    expect_exit $L 0 "lockstep client ($sim, $delay ms)"
    expect_exit $S 0 "server ($sim, $delay ms)"
    pkill -f "lockstep-netsim --listen $((port + 1)) " ; pkill -f "lockstep-netsim --listen $((port + 2)) "
    cmp "$dir/server.log" "$dir/p.log" || fail "the predicting client's hashes differ ($sim, $delay ms)"
    cmp "$dir/server.log" "$dir/l.log" || fail "the lockstep client's hashes differ ($sim, $delay ms)"
    json_check "$dir/p.json" 'd["prediction"]["verified_predictions"] > 300 and d["prediction"]["predicted_ticks"] > 300' "no prediction ran ($sim, $delay ms)"
    echo "ok: $sim at $delay ms: hash-equal; own input to screen $(json_get "$dir/p.json" 'd["input_to_screen_ms"]') predicting, $(json_get "$dir/l.json" 'd["input_to_screen_ms"]') in lockstep"
    if [ "$delay" = 80 ] && [ "$n" -le 3 ]; then
      json_check "$dir/p.json" 'd["input_to_screen_ms"]["p50"] < 10 + 1000 / 60' "own input not on screen within a tick and a frame at 80 ms"
      json_check "$dir/l.json" 'd["input_to_screen_ms"]["p50"] > 160' "the lockstep client's own input should take a round trip"
    fi
  done
done
echo "PASS: prediction draws own input at once and leaves every hash log equal to the server's (3 games x 3 latencies)"
