#!/usr/bin/env bash
# Server CPU of one 4-player session at 100 Hz, from the kernel's own accounting
# (/proc/PID/schedstat, nanoseconds), over the middle of a 15 s session.
# Usage: tools/measure-server-cpu.sh [idle|bot] [BIN_DIR]
set -u
MODE=${1:-idle}; BIN=${2:-build/bin}; PORT=$((20000 + RANDOM % 20000))
"$BIN/lockstep-server" --port $PORT --players 4 --ticks 1500 --summary /tmp/measure-server.json 2>/dev/null &
S=$!
sleep 0.3
for i in 1 2 3 4; do
  if [ "$MODE" = bot ]; then "$BIN/lockstep-client" --connect 127.0.0.1:$PORT --name c$i --bot $i >/dev/null 2>&1 &
  else "$BIN/lockstep-client" --connect 127.0.0.1:$PORT --name c$i >/dev/null 2>&1 & fi
done
sleep 1
a=$(cut -d' ' -f1 /proc/$S/schedstat); t0=$(date +%s%N)
sleep 12
b=$(cut -d' ' -f1 /proc/$S/schedstat); t1=$(date +%s%N)
wait
echo "server CPU ($MODE players): $(awk -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", (b - a) * 100 / (t1 - t0) }') % of a core"
cat /tmp/measure-server.json
