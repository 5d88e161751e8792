#!/usr/bin/env bash
# Prediction's figures side by side in one run: for each world (arena 64 and 2000 bodies,
# skirmish 1000 units in all) and one-way latency (0, 80, 150, 250 ms +- 10 %, 2 % loss through
# lockstep-netsim), a 1500-tick session of a predicting client (--predict 64) and a lockstep
# client, both bots drawing at 60 fps (--render none --fps 60). Prints own input to screen
# p50/p99 for both, and for the predicting one the re-simulated ticks per second, the prediction
# CPU per drawn frame and the share of predicted ticks whose hash was wrong (mispredictions).
# Usage: tools/measure-predict.sh [BIN_DIR]
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
PORT=$((25000 + RANDOM % 2000))
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
printf "%-22s %-6s %-20s %-20s %-12s %-12s %-10s\n" world "ms" "predicting p50/p99" "lockstep p50/p99" "resim t/s" "cpu/frame" "mispredict"
for world in "arena|bodies=64" "arena|bodies=2000" "skirmish|units=500"; do
  sim=${world%%|*}; settings=${world##*|}
  for d in 0 80 150 250; do
    "$BIN/lockstep-server" --sim "$sim" --world "$settings" --port $PORT --players 2 --ticks 1500 >/dev/null 2>&1 &
    S=$!
    for i in 1 2; do
      "$BIN/lockstep-netsim" --listen $((PORT + i)) --forward 127.0.0.1:$PORT --delay $d --jitter $((d / 10)) --loss 2 \
          --seed $i --duration 40 >/dev/null 2>&1 &
    done
    sleep 0.3
    "$BIN/lockstep-client" --sim "$sim" --connect 127.0.0.1:$((PORT + 1)) --name p --bot 1 --predict 64 --render none --fps 60 \
        --summary "$out/p.json" >/dev/null 2>&1 &
    P=$!
    "$BIN/lockstep-client" --sim "$sim" --connect 127.0.0.1:$((PORT + 2)) --name l --bot 2 --render none --fps 60 \
        --summary "$out/l.json" >/dev/null 2>&1
    wait $P $S
    pkill -f "lockstep-netsim --listen $((PORT + 1)) "; pkill -f "lockstep-netsim --listen $((PORT + 2)) "
    python3 - "$out/p.json" "$out/l.json" "$sim $settings" "$d" <<'PY'
import json, sys
p, l = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pr = p["prediction"]
secs = 15.0
v = pr["verified_predictions"] or 1
print("%-22s %-6s %-20s %-20s %-12.0f %-12s %-10s" % (sys.argv[3], sys.argv[4],
      "%.1f / %.1f ms" % (p["input_to_screen_ms"]["p50"], p["input_to_screen_ms"]["p99"]),
      "%.1f / %.1f ms" % (l["input_to_screen_ms"]["p50"], l["input_to_screen_ms"]["p99"]),
      pr["predicted_ticks"] / secs, "%.3f ms" % (pr["cpu_ms"] / max(1, p["frames"])),
      "%.1f %%" % (100.0 * pr["mispredictions"] / v)))
PY
    PORT=$((PORT + 10))
  done
done
