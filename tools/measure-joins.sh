#!/usr/bin/env bash
# How long joining takes through a bad link: ROUNDS rounds of a server for N players, each player
# a bot client through its own lockstep-netsim at 60 ms one way with LOSS % dropped both ways
# (seeded per round and player, so two builds meet the same loss pattern). Prints, for each
# round, the seconds from start to each player's join as the server logged it, how many never
# joined within the client's 20 s, and how many clients opened a fresh connection because the
# server said nothing on theirs; then the median, 90th percentile and maximum over all joins.
# Usage: tools/measure-joins.sh [BIN_DIR] [N] [ROUNDS] [LOSS]   (default: build/bin 8 8 40)
set -u
BIN=${1:-build/bin}; N=${2:-8}; ROUNDS=${3:-8}; LOSS=${4:-40}
DIR=$(mktemp -d); trap 'rm -rf "$DIR"' EXIT
export LD_LIBRARY_PATH="$(cd "$BIN/../lib" 2>/dev/null && pwd)"
stamp() {  # each line, prefixed with the seconds since $1
  python3 -u -c 'import sys, time
t0 = float(sys.argv[1])
for l in sys.stdin: sys.stdout.write("%.3f %s" % (time.time() - t0, l))' "$1"
}
ALL=()
for r in $(seq "$ROUNDS"); do
  D="$DIR/$r"; mkdir -p "$D"; P=$((24000 + RANDOM % 400 * 20))
  T0=$(date +%s.%N)
  timeout 40 "$BIN/lockstep-server" --port "$P" --players "$N" --ticks 30 >/dev/null 2> >(stamp "$T0" >"$D/server.err") &
  PIDS=($!); CL=()
  for i in $(seq "$N"); do
    "$BIN/lockstep-netsim" --listen $((P + i)) --forward "127.0.0.1:$P" --delay 60 --loss "$LOSS" --seed $((r * 100 + i)) \
        >/dev/null 2>&1 &
    PIDS+=($!)
    timeout 40 "$BIN/lockstep-client" --connect "127.0.0.1:$((P + i))" --name "p$i" --bot "$i" >/dev/null 2>"$D/c$i.err" &
    CL+=($!)
  done
  wait "${CL[@]}"
  kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null
  JOINS=$(grep -h "joined from" "$D/server.err" | awk '{print $1}' | tr '\n' ' ')
  ALL+=($JOINS)
  echo "round $r: ${JOINS}| never joined: $(grep -l "could not connect" "$D"/c*.err | wc -l)," \
       "fresh connections: $(cat "$D"/c*.err | grep -c "connecting again")"
done
printf '%s\n' "${ALL[@]}" | sort -n | awk '{a[NR] = $1} END {
  printf "%d joins: median %.2f s, p90 %.2f s, max %.2f s\n", NR, a[int((NR + 1) / 2)], a[int(NR * 0.9)], a[NR] }'
