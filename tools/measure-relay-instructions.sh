#!/usr/bin/env bash
# Instructions the server spends per client-tick (valgrind's callgrind: repeatable where CPU time
# is not), the simulating server beside the same server in relay mode (--relay), and the floor,
# lockstep-bench-relay (ENet alone) moving packets of the same sizes for 4 raw clients. Each runs
# one 4-player session of 1000 and of 2000 ticks; the difference, over 4000 client-ticks, is what
# a tick costs in play, without start-up (dynamic linking, the lobby) and shutdown. Also given:
# ServerSession::update inclusive, over the longer run. With the cache simulated (callgrind
# --cache-sim=yes: a 32 KB L1 and the machine's last level, as valgrind models them), the misses of
# the first-level data cache and of the last level per client-tick too: the working set, in a
# figure that does not move with the machine's load.
# Usage: tools/measure-relay-instructions.sh [BIN_DIR]
set -u
BIN=${1:-build/bin}; DIR=$(mktemp -d); PORT=$((20000 + RANDOM % 8000))
export LD_LIBRARY_PATH="$(cd "$BIN/../lib" 2>/dev/null && pwd)"
"$BIN/lockstep-synctest" --describe >"$DIR/game.json" 2>/dev/null || { echo "lockstep-synctest --describe failed"; exit 1; }
# The run's totals from the callgrind file: instructions, first-level data misses (reads and
# writes), last-level misses (instructions and data).
total() {
  awk '/^events:/ { for (i = 2; i <= NF; ++i) col[$i] = i - 1 }
       /^(summary|totals):/ { print $(col["Ir"] + 1), $(col["D1mr"] + 1) + $(col["D1mw"] + 1),
                              $(col["ILmr"] + 1) + $(col["DLmr"] + 1) + $(col["DLmw"] + 1); exit }' "$1"
}
server() {  # server NAME TICKS [server options]: prints the run's total and ServerSession::update
  local name=$1 ticks=$2; shift 2
  valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$DIR/$name.cg" "$BIN/lockstep-server" --port $PORT --players 4 \
      --ticks "$ticks" "$@" >/dev/null 2>"$DIR/$name.err" &
  sleep 2
  for i in 1 2 3 4; do "$BIN/lockstep-client" --connect 127.0.0.1:$PORT --name c$i --bot $i >/dev/null 2>&1 & done
  wait
  echo "$(total "$DIR/$name.cg") $(callgrind_annotate --inclusive=yes "$DIR/$name.cg" 2>/dev/null |
      grep -m1 'ServerSession::update(long)' | awk '{gsub(",", "", $1); print $1}')"
}
bare() {  # bare NAME TICKS: 45 bytes up and 39 down of UDP payload less ENet's 12 (the session's sizes)
  valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$DIR/$1.cg" "$BIN/lockstep-bench-relay" --port $PORT --players 4 \
      --ticks "$2" --down-bytes 39 >/dev/null 2>"$DIR/$1.err" &
  sleep 2
  "$BIN/lockstep-bench-load" --base-port $PORT --sessions 1 --players 4 --raw 45 >/dev/null 2>&1
  wait
  total "$DIR/$1.cg"
}
read -r s1 sd1 sl1 _ <<<"$(server sim1 1000)"; read -r s2 sd2 sl2 su <<<"$(server sim2 2000)"
read -r r1 rd1 rl1 _ <<<"$(server relay1 1000 --relay "$DIR/game.json")"; read -r r2 rd2 rl2 ru <<<"$(server relay2 2000 --relay "$DIR/game.json")"
read -r b1 bd1 bl1 <<<"$(bare bare1 1000)"; read -r b2 bd2 bl2 <<<"$(bare bare2 2000)"
echo "$s1 $s2 $su $r1 $r2 $ru $b1 $b2 $sd1 $sd2 $rd1 $rd2 $bd1 $bd2 $sl1 $sl2 $rl1 $rl2 $bl1 $bl2" | awk '{
  sim = ($2 - $1) / 4000; relay = ($5 - $4) / 4000; bare = ($8 - $7) / 4000;
  printf "instructions per client-tick in play (4 clients, 2000 less 1000 ticks): simulating server %d, relay mode %d, bare ENet relay %d (relay mode %.2fx the bare relay, the simulating server %.2fx)\n", sim, relay, bare, relay / bare, sim / bare;
  sd = ($10 - $9) / 4000; rd = ($12 - $11) / 4000; bd = ($14 - $13) / 4000;
  printf "first-level data cache misses per client-tick: simulating server %.1f, relay mode %.1f, bare ENet relay %.1f (relay mode %.2fx)\n", sd, rd, bd, (bd > 0 ? rd / bd : 0);
  sl = ($16 - $15) / 4000; rl = ($18 - $17) / 4000; bl = ($20 - $19) / 4000;
  printf "last-level cache misses per client-tick: simulating server %.2f, relay mode %.2f, bare ENet relay %.2f\n", sl, rl, bl;
  printf "ServerSession::update per client-tick (2000 ticks): simulating %d, relay mode %d\n", $3 / 8000, $6 / 8000 }'
rm -rf "$DIR"
