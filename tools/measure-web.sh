#!/usr/bin/env bash
# The browser player's figures, measured side by side in one run: a session of a browser player
# (lockstep-web in headless Chromium, steered with real key events, prediction on) and a native
# player on loopback; then the step-time workload in the page's wasm and natively.
#   tools/measure-web.sh [BIN_DIR] [WEB_BUILD_DIR] [TICKS]     (defaults: build/bin build-web 3000)
# Prints: the browser's ticks a second; own input to screen (the client's figure: a tick's input
# sampled to the first drawn frame showing it; and the page's: a key event to the end of the first
# frame drawn after it, to which the browser adds its wait for the next vsync); the wasm step time
# against native (and that both reach the same hash); the bytes on the wire per client-tick of the
# WebSocket player against the ENet player's.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/bin}
WEB_BUILD=${2:-build-web}
TICKS=${3:-3000}
tools/build-web.sh "$WEB_BUILD" >/dev/null
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
PORT=$((24000 + RANDOM % 1000))
"$BIN/lockstep-server" --port $PORT --bind 127.0.0.1 --players 2 --ticks "$TICKS" --websocket-port $((PORT + 1)) \
    --web-root "$WEB_BUILD/web" --summary "$WORK/server.json" 2>"$WORK/server.err" &
sleep 0.3
"$BIN/lockstep-client" --connect 127.0.0.1:$PORT --name native --bot 1 --summary "$WORK/native.json" 2>/dev/null &
keys=$(for _ in $(seq $((TICKS / 300))); do printf 'Up:1,Right:0.3,Down:1,Left:0.3,'; done)
/usr/bin/python3 tests/e2e/browser.py "http://127.0.0.1:$((PORT + 1))/?name=web" --keys "${keys%,}" \
    --timeout $((TICKS / 100 + 60)) --bench 30000 --out "$WORK/page.json" >/dev/null
wait
"$BIN/lockstep-bench" --only web --repetitions 7 --json "$WORK/bench.json" >/dev/null 2>&1
/usr/bin/python3 - "$WORK" <<'PY'
import json, statistics, sys
w = sys.argv[1]
page, server = json.load(open(f"{w}/page.json")), json.load(open(f"{w}/server.json"))
native_row = json.load(open(f"{w}/bench.json"))["rows"][0]
f, b = page["figures"], page["bench"]
keys = sorted(page["key_to_drawn_ms"])
def pct(xs, p): return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")
native = json.load(open(f"{w}/native.json"))
# Each side as its client counts it, per executed tick: the page's WebSocket messages with their
# frame headers and 52 bytes of TCP/IPv4 header (with timestamps) a message, the native client's
# UDP payloads with 28 bytes of UDP/IPv4 header a datagram. TCP's acknowledgements are not counted.
ws_up = (f["bytes"]["sent"] + 52 * f["messages"]["sent"]) / f["tick"]
ws_down = (f["bytes"]["received"] + 52 * f["messages"]["received"]) / f["tick"]
enet_up, enet_down = native["wire_bytes_per_tick"]["up"], native["wire_bytes_per_tick"]["down"]
native_us = native_row["value"]
native_hash = native_row["note"].split()[-1]
print(f"browser: exit {page['exit']}, {f['tick']} ticks, {f['ticks_per_second']:.2f} ticks/s (the session's pace: {server['ticks_per_second']:.2f})")
print(f"own input to screen, the client's figure (sampled -> drawn), prediction {f['predict']}: "
      f"p50 {f['input_to_screen_ms']['p50']:.1f} ms, p99 {f['input_to_screen_ms']['p99']:.1f} ms")
print(f"key event -> end of the frame drawn after it ({len(keys)} keys): p50 {pct(keys, .5):.1f} ms, p99 {pct(keys, .99):.1f} ms "
      f"(+ up to one vsync, 16.7 ms at 60 Hz, to the screen)")
print(f"wasm step (arena, 4 players, {b['ticks']} ticks): median {b['step_us_median']:.2f} us against native "
      f"{native_us:.2f} us: {b['step_us_median'] / native_us:.2f}x; hashes {'equal' if b['hash'] == native_hash else 'DIFFER'} "
      f"({b['hash']} / {native_hash})")
print(f"bytes per client-tick, with TCP/IP (52 B a message) and UDP/IP (28 B a datagram) headers: "
      f"WebSocket up {ws_up:.1f} down {ws_down:.1f}; ENet up {enet_up:.1f} down {enet_down:.1f}; "
      f"ratio up {ws_up / enet_up:.2f}x down {ws_down / enet_down:.2f}x")
def dist(a, c): return ((c["x"] - a["x"]) ** 2 + (c["y"] - a["y"]) ** 2) ** 0.5
thrust = [dist(a, c) for k, a, c in page.get("own_disc") or [] if a and c and k in ("Up", "Down")]
print(f"steering: the own disc moved a median {statistics.median(thrust) if thrust else 0:.1f} world units in each of "
      f"{len(thrust)} one-second thrusts (arrows: up/down thrust, left/right turn)")
PY
