#!/usr/bin/env bash
# A browser player beside a native one in the same session, over each of the browser's paths, at
# each of three networks, side by side in one run: the figures PERFORMANCE.md "Browser against
# native" prints.
#   tools/measure-browser-paths.sh [BIN_DIR] [WEB_BUILD_DIR] [TICKS]   (defaults: build/bin build-web 2000)
# Paths: datagrams (a WebRTC data channel, lockstep-server --webrtc) and the WebSocket alone
# (?datagrams=0). Networks, through lockstep-netsim on every path (UDP for the native player and
# the data channel, its --tcp mode for the WebSocket): loopback (0 ms), 40 ms one way +-5 ms with
# 2 % loss, 150 ms one way +-10 ms. The page is steered by real key events (prediction on, its
# default limit); the native player is a bot drawing at 60 fps with the same prediction limit.
# Prints a row a session: the page's ticks a second, inputs filled (the server's count) for the
# page and the native player, the page's key event to the end of the frame drawn after it (p50 and
# p99; the browser adds its wait for the next vsync), each client's own input to screen (sampled
# to drawn), and the bytes a client-tick each way with their IP headers (TCP 52 B a message, UDP
# 28 B a datagram, the native client sending one a tick each way; a data channel message 13 + 16 B
# DTLS and 28 B SCTP more).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/bin}
WEB_BUILD=${2:-build-web}
TICKS=${3:-2000}
tools/build-web.sh "$WEB_BUILD" >/dev/null
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; [ -n "${KEEP_WORK:-}" ] && echo "work dir kept: $WORK" >&2 || rm -rf "$WORK"' EXIT
PORT=$((26000 + RANDOM % 1000))
keys=$(for _ in $(seq $((TICKS / 300 + 1))); do printf 'Up:1,Right:0.3,Down:1,Left:0.3,'; done)

# run NAME PATH DELAY JITTER LOSS
run() {
  local name=$1 path=$2 delay=$3 jitter=$4 loss=$5 base=$((PORT + 10 * ${RUNS:-0})) query="" webrtc=()
  RUNS=$((${RUNS:-0} + 1))
  mkdir -p "$WORK/$name"
  if [ "$path" = datagrams ]; then
    webrtc=(--webrtc-ports $((base + 4))-$((base + 4)) --webrtc-address 127.0.0.1:$((base + 5)))
  else
    query="&datagrams=0"
  fi
  local net=(--delay "$delay" --jitter "$jitter" --loss "$loss")
  "$BIN/lockstep-server" --port "$base" --bind 127.0.0.1 --players 2 --ticks "$TICKS" --websocket-port $((base + 1)) \
      --web-root "$WEB_BUILD/web" --summary "$WORK/$name/server.json" "${webrtc[@]}" 2>"$WORK/$name/server.err" &
  local pids=($!)
  "$BIN/lockstep-netsim" --listen $((base + 2)) --forward 127.0.0.1:$base "${net[@]}" --seed 1 >/dev/null 2>&1 & pids+=($!)
  "$BIN/lockstep-netsim" --tcp --listen $((base + 3)) --forward 127.0.0.1:$((base + 1)) "${net[@]}" --seed 2 >/dev/null 2>&1 & pids+=($!)
  [ "$path" = datagrams ] && { "$BIN/lockstep-netsim" --listen $((base + 5)) --forward 127.0.0.1:$((base + 4)) "${net[@]}" --seed 3 >/dev/null 2>&1 & pids+=($!); }
  sleep 0.3
  "$BIN/lockstep-client" --connect 127.0.0.1:$((base + 2)) --name native --bot 1 --fps 60 --predict 64 \
      --summary "$WORK/$name/native.json" 2>/dev/null &
  local native=$!
  /usr/bin/python3 tests/e2e/browser.py "http://127.0.0.1:$((base + 3))/?name=web$query" --keys "${keys%,}" \
      --timeout $((TICKS / 100 + 60)) --out "$WORK/$name/page.json" >/dev/null
  wait "$native" "${pids[0]}" || true
  kill "${pids[@]:1}" 2>/dev/null || true
  /usr/bin/python3 - "$WORK/$name" "$name" <<'PY'
import json, sys
w, name = sys.argv[1], sys.argv[2]
page, server, native = (json.load(open(f"{w}/{n}.json")) for n in ("page", "server", "native"))
f = page["figures"]
seats = {s["name"]: s for s in server["seats"]}
fills = {n: sum(seats[n]["fills"].values()) for n in ("web", "native")}
keys = sorted(page["key_to_drawn_ms"])
def pct(xs, p): return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")
dg = f["datagrams"]
# The page's bytes as its transport counts them (a data channel message with its DTLS, SCTP, UDP
# and IP headers; a WebSocket message with its frame header), plus 52 B of TCP/IP a WebSocket message.
ws_msgs_up, ws_msgs_down = f["messages"]["sent"] - dg["sent"], f["messages"]["received"] - dg["received"]
up = (f["bytes"]["sent"] + 52 * ws_msgs_up) / f["tick"]
down = (f["bytes"]["received"] + 52 * ws_msgs_down) / f["tick"]
print(f"| {name} | {f['play_path'] if __import__('os').environ.get('KEEP_WORK') else f['play_path'].split(' (')[0]} | {f['ticks_per_second']:.1f} | {fills['web']} / {fills['native']} | "
      f"{pct(keys, .5):.1f} / {pct(keys, .99):.1f} ({len(keys)}) | {f['input_to_screen_ms']['p50']:.1f} / "
      f"{native['input_to_screen_ms']['p50']:.1f} | {up:.0f} / {native['wire_bytes_per_tick']['up'] + 28:.0f} | "
      f"{down:.0f} / {native['wire_bytes_per_tick']['down'] + 28:.0f} |")
PY
}

echo "| network | the page's path | page ticks/s | inputs filled, page / native | page key to drawn frame p50 / p99 ms (keys) | own input to screen p50, page / native ms | bytes a client-tick up, page / native | down, page / native |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for path in ${PATHS:-datagrams websocket}; do
  for net in ${NETS:-0 40 150}; do
    case $net in
      0) run "0ms-$path" $path 0 0 0 ;;
      40) run "40ms-2%-$path" $path 40 5 2 ;;
      150) run "150ms-$path" $path 150 10 0 ;;
    esac
  done
done
