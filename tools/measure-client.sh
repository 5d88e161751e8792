#!/usr/bin/env bash
# Client CPU per rendered frame at --fps 60 and frame-pacing jitter, for --render none or tty
# (tty runs inside tmux, a real terminal). Usage: tools/measure-client.sh BODIES none|tty [BIN_DIR]
set -u
BODIES=${1:-64}; R=${2:-none}; BIN=$(cd "${3:-build/bin}" && pwd); PORT=$((20000 + RANDOM % 20000))
out=$(mktemp -d)
"$BIN/lockstep-server" --port $PORT --players 1 --ticks 1000 --bodies "$BODIES" >/dev/null 2>&1 &
S=$!
sleep 0.3
cmd="/usr/bin/time -f '%U %S' -o $out/time $BIN/lockstep-client --connect 127.0.0.1:$PORT --name m --bot 1 --render $R --fps 60 --summary $out/client.json 2>/dev/null"
if [ "$R" = tty ]; then
  tmux -S "$out/tmux" new-session -d -x 120 -y 40 "$cmd"
  wait $S; sleep 0.5; tmux -S "$out/tmux" kill-server 2>/dev/null
else
  eval "$cmd" >/dev/null; wait $S
fi
frames=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["frames"])' "$out/client.json")
cpu=$(awk '{print $1 + $2}' "$out/time")
echo "bodies=$BODIES render=$R frames=$frames cpu_s=$cpu us_per_frame=$(awk -v c="$cpu" -v f="$frames" 'BEGIN { printf "%.0f", c * 1e6 / f }') frame_jitter_us=$(python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["frame_jitter_us"]))' "$out/client.json")"
rm -rf "$out"
