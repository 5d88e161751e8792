#!/usr/bin/env bash
# A late joiner's snapshot on the simulating server against relay mode (the state fetched from a
# peer, checked against the settled hash, then forwarded): its bytes and the time from the
# welcome to the state loaded and checked, as the joiner's summary reports them. Each run: an
# arena of BODIES bodies, two bots 40 ms one way behind lockstep-netsim, a third that leaves at
# tick 200, and a late joiner (also behind netsim) at tick 400. Medians of RUNS runs per mode.
# Usage: tools/measure-join-snapshot.sh [BIN_DIR] [BODIES] [RUNS]
set -u
BIN=${1:-build/bin}; BODIES=${2:-2000}; RUNS=${3:-5}
DIR=$(mktemp -d); trap 'rm -rf "$DIR"' EXIT
export LD_LIBRARY_PATH="$(cd "$BIN/../lib" 2>/dev/null && pwd)"
"$BIN/lockstep-synctest" --world "bodies=$BODIES" --describe >"$DIR/game.json" 2>/dev/null || { echo "describe failed"; exit 1; }
one() {  # one MODE RUN -> "bytes us"
  local mode=$1 run=$2 port=$((20000 + RANDOM % 8000)) extra=()
  [ "$mode" = relay ] && extra=(--relay "$DIR/game.json") || extra=(--bodies "$BODIES")
  "$BIN/lockstep-server" --port $port --players 3 --ticks 700 --allow-late-join "${extra[@]}" >/dev/null 2>&1 &
  local s=$! pids=()
  "$BIN/lockstep-netsim" --listen $((port + 1)) --forward 127.0.0.1:$port --delay 40 --jitter 5 --seed $run >/dev/null 2>&1 &
  local n=$!
  sleep 0.3
  for b in 1 2; do "$BIN/lockstep-client" --connect 127.0.0.1:$((port + 1)) --name b$b --bot $b >/dev/null 2>&1 & pids+=($!); done
  "$BIN/lockstep-client" --connect 127.0.0.1:$port --name early --bot 3 --ticks 200 >/dev/null 2>&1 &
  sleep 5.5
  "$BIN/lockstep-client" --connect 127.0.0.1:$((port + 1)) --name late --bot 4 --summary "$DIR/late.json" >/dev/null 2>&1
  wait $s "${pids[@]}" 2>/dev/null
  kill $n 2>/dev/null
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["snapshot"]["bytes"], d["snapshot"]["us"])' "$DIR/late.json"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for mode in sim relay; do
  : >"$DIR/$mode"
  for r in $(seq "$RUNS"); do one $mode $r >>"$DIR/$mode"; done
done
sb=$(cut -d' ' -f1 "$DIR/sim" | median); su=$(cut -d' ' -f2 "$DIR/sim" | median)
rb=$(cut -d' ' -f1 "$DIR/relay" | median); ru=$(cut -d' ' -f2 "$DIR/relay" | median)
echo "late join, $BODIES bodies, 40 ms one way, medians of $RUNS: from the server $sb bytes in $((su / 1000)) ms; from a peer (relay mode) $rb bytes in $((ru / 1000)) ms ($(awk -v a="$ru" -v b="$su" 'BEGIN { printf "%.2f", a / b }')x the time)"
