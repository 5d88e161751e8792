#!/usr/bin/env bash
# The loss the session reports against the loss injected: for each percentage, a server and two
# bot clients, each through its own lockstep-netsim dropping that share of datagrams both ways,
# 1500 ticks. Prints the server's loss of each player's play messages (up), each client's loss of
# the server's (down), ENet's own estimate beside them, and what netsim dropped.
# Usage: tools/measure-loss.sh [BIN_DIR] [PERCENT...]   (default: 0 2 5 20)
set -u
BIN=${1:-build/bin}; shift || true
LOSSES=("$@"); [ ${#LOSSES[@]} -gt 0 ] || LOSSES=(0 2 5 20)
DIR=$(mktemp -d); trap 'rm -rf "$DIR"' EXIT
export LD_LIBRARY_PATH="$(cd "$BIN/../lib" 2>/dev/null && pwd)"
PORT=$((21000 + RANDOM % 8000))
printf '%-9s %-26s %-26s %-20s %s\n' injected "up (server sees)" "down (client sees)" "ENet's (client)" "netsim dropped up/down"
for L in "${LOSSES[@]}"; do
  "$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 1500 --summary "$DIR/s.json" >/dev/null 2>"$DIR/s.err" &
  S=$!
  R=()
  for i in 1 2; do
    "$BIN/lockstep-netsim" --listen $((PORT + i)) --forward "127.0.0.1:$PORT" --delay 20 --jitter 2 --loss "$L" --seed "$i" \
        --summary "$DIR/n$i.json" 2>/dev/null &
    R+=($!)
  done
  for i in 1 2; do
    "$BIN/lockstep-client" --connect "127.0.0.1:$((PORT + i))" --name "p$i" --bot "$i" --summary "$DIR/c$i.json" >/dev/null 2>&1 &
    C[$i]=$!
  done
  wait "${C[1]}" "${C[2]}" "$S"
  for r in "${R[@]}"; do kill -INT "$r"; wait "$r"; done
  python3 - "$L" "$DIR" <<'PY'
import json, sys
L, d = sys.argv[1], sys.argv[2]
s = json.load(open(f"{d}/s.json"))
c = [json.load(open(f"{d}/c{i}.json")) for i in (1, 2)]
n = [json.load(open(f"{d}/n{i}.json")) for i in (1, 2)]
up = " / ".join(f"{x['loss'] * 100:.2f} %" for x in s["seats"])
down = " / ".join(f"{x['loss'] * 100:.2f} %" for x in c)
enet = " / ".join(f"{x['loss_enet'] * 100:.2f} %" for x in c)
drop = " / ".join(f"{100 * x['up']['lost'] / max(1, x['up']['in']):.1f}-{100 * x['down']['lost'] / max(1, x['down']['in']):.1f} %" for x in n)
print(f"{L + ' %':<9} {up:<26} {down:<26} {enet:<20} {drop}")
PY
  PORT=$((PORT + 10))
done
