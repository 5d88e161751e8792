#!/usr/bin/env bash
# The view and input latency of games on the embedding API, side by side in one run: for 0, 80
# and 150 ms one way (+- 15 %, through lockstep-netsim), a walkers session of 1500 ticks with the
# stock lockstep-client (--render none --fps 144: frames counted, not drawn) and the C game
# (tests/embed/c_player.c, 60 Hz loop, owning its state). Prints per row the stock client's
# input latency (sampled to executed, p50/p99 ms) and, for both, the share of frames at alpha 1
# and the playout delay. Usage: tools/measure-embed.sh [BUILD_DIR]
set -u
BUILD=$(cd "${1:-build}" && pwd); BIN="$BUILD/bin"; LIB="$BIN/libwalkers.so"
export LD_LIBRARY_PATH="$BUILD/lib"
PORT=$((24000 + RANDOM % 2000))
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
printf "%-8s %-26s %-24s %-24s\n" "one way" "stock: latency p50/p99" "stock: at alpha 1, playout" "C game: at alpha 1, playout"
for d in 0 80 150; do
  j=$((d * 15 / 100))
  "$BIN/lockstep-server" --sim-lib "$LIB" --port $PORT --players 2 --ticks 1500 >/dev/null 2>&1 &
  S=$!
  for i in 1 2; do
    "$BIN/lockstep-netsim" --listen $((PORT + i)) --forward 127.0.0.1:$PORT --delay $d --jitter $j --seed $i --duration 40 >/dev/null 2>&1 &
  done
  sleep 0.3
  "$BIN/lockstep-client" --sim-lib "$LIB" --connect 127.0.0.1:$((PORT + 1)) --name stock --bot 1 --render none --fps 144 \
      --summary "$out/stock.json" 2>/dev/null &
  C=$!
  "$BIN/lockstep-c-player" 127.0.0.1 $((PORT + 2)) cgame 2 "$out/c.log" 2>"$out/c.err"
  wait $C $S
  pkill -f "lockstep-netsim --listen $((PORT + 1))"; pkill -f "lockstep-netsim --listen $((PORT + 2))"
  stock=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); l=d["latency_us"]; print("%.1f / %.1f ms|%.1f %% (%d of %d), %.1f ms" % (l["p50"]/1e3, l["p99"]/1e3, 100*d["alpha_clamped_share"], d["frames_at_alpha_1"], d["frames"], d["playout_ms"]))' "$out/stock.json")
  cgame=$(sed -n 's/.*playout \([0-9.]*\) ms, \([0-9]*\) of \([0-9]*\) frames at alpha 1/\2 \3 \1/p' "$out/c.err" | awk '{printf "%.1f %% (%d of %d), %.1f ms", 100*$1/$2, $1, $2, $3}')
  printf "%-8s %-26s %-24s %-24s\n" "$d ms" "${stock%%|*}" "${stock##*|}" "$cgame"
  PORT=$((PORT + 10))
done
echo "lines of the C game (tests/embed/c_player.c): $(wc -l <"$(dirname "$0")/../tests/embed/c_player.c")"
