#!/usr/bin/env bash
# Instructions the server's session spends per client-tick (valgrind's callgrind: repeatable where
# CPU time is not), the simulating server beside the same server in relay mode (--relay), one
# 4-bot session of 1000 ticks each: ServerSession::update inclusive, and the whole process; and
# the floor, lockstep-bench-relay (ENet alone) moving packets of the same sizes for 4 raw clients.
# Usage: tools/measure-relay-instructions.sh [BIN_DIR]
set -u
BIN=${1:-build/bin}; DIR=$(mktemp -d); PORT=$((20000 + RANDOM % 8000))
export LD_LIBRARY_PATH="$(cd "$BIN/../lib" 2>/dev/null && pwd)"
"$BIN/lockstep-synctest" --describe >"$DIR/game.json" 2>/dev/null || { echo "lockstep-synctest --describe failed"; exit 1; }
run() {  # run NAME [server options]
  local name=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$DIR/$name.cg" "$BIN/lockstep-server" --port $PORT --players 4 \
      --ticks 1000 "$@" >/dev/null 2>"$DIR/$name.err" &
  local s=$!
  sleep 2
  for i in 1 2 3 4; do "$BIN/lockstep-client" --connect 127.0.0.1:$PORT --name c$i --bot $i >/dev/null 2>&1 & done
  wait
  local update total
  update=$(callgrind_annotate --inclusive=yes "$DIR/$name.cg" 2>/dev/null | grep -m1 'ServerSession::update(long)' | awk '{gsub(",", "", $1); print $1}')
  total=$(callgrind_annotate "$DIR/$name.cg" 2>/dev/null | grep -m1 'PROGRAM TOTALS' | awk '{gsub(",", "", $1); print $1}')
  echo "$name $update $total"
}
sim=$(run simulating)
relay=$(run relay --relay "$DIR/game.json")
# The bare relay: 45 bytes up and 39 down of UDP payload less ENet's 12 (the session's sizes).
valgrind --tool=callgrind --callgrind-out-file="$DIR/bare.cg" "$BIN/lockstep-bench-relay" --port $PORT --players 4 \
    --ticks 1000 --down-bytes 39 >/dev/null 2>"$DIR/bare.err" &
b=$!
sleep 2
"$BIN/lockstep-bench-load" --base-port $PORT --sessions 1 --players 4 --raw 45 >/dev/null 2>&1
wait
bare=$(callgrind_annotate "$DIR/bare.cg" 2>/dev/null | grep -m1 'PROGRAM TOTALS' | awk '{gsub(",", "", $1); print $1}')
echo "$sim" "$relay" "$bare" | awk '{ printf "per client-tick (4 clients x 1000 ticks): session update %d instr simulating, %d relay mode (%.2fx); whole process %d simulating, %d relay mode, %d bare ENet relay (relay mode %.2fx the bare relay)\n", $2 / 4000, $5 / 4000, $5 / $2, $3 / 4000, $6 / 4000, $7 / 4000, $6 / $7 }'
rm -rf "$DIR"
