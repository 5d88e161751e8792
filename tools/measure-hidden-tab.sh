#!/usr/bin/env bash
# A browser player whose tab is hidden (another tab in front) for MINUTES, with Chromium throttling
# it as it does a background tab (timers once a second, and after five minutes once a minute), in a
# session with a native bot on loopback: does it stay in its seat, and how often is it served?
#   tools/measure-hidden-tab.sh [BIN_DIR] [WEB_BUILD_DIR] [MINUTES]   (defaults: build/bin build-web 10)
# Prints the page's samples while hidden (seconds, visibility, its tick, its exit, times served
# hidden), whether it rejoined or was dropped, the inputs the server filled for it, and whether
# its hashes are the server's.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/bin}
WEB_BUILD=${2:-build-web}
MINUTES=${3:-10}
tools/build-web.sh "$WEB_BUILD" >/dev/null
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
PORT=$((27000 + RANDOM % 1000))
HIDE=$((MINUTES * 60))
TICKS=$(((HIDE + 30) * 100))
"$BIN/lockstep-server" --port $PORT --bind 127.0.0.1 --players 2 --ticks $TICKS --websocket-port $((PORT + 1)) \
    --web-root "$WEB_BUILD/web" --webrtc --hash-log "$WORK/server.log" --summary "$WORK/server.json" 2>"$WORK/server.err" &
sleep 0.3
"$BIN/lockstep-client" --connect 127.0.0.1:$PORT --name native --bot 1 2>/dev/null &
/usr/bin/python3 tests/e2e/browser.py "http://127.0.0.1:$((PORT + 1))/?name=web&bot=2" --throttled --hide-at 300 \
    --hide-for $HIDE --timeout $((HIDE + 120)) --out "$WORK/page.json" >/dev/null
wait
/usr/bin/python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
page, server = json.load(open(f"{w}/page.json")), json.load(open(f"{w}/server.json"))
h = page.get("hidden") or {}
seat = [s for s in server["seats"] if s["name"] == "web"][0]
print(f"hidden at tick {h.get('at_tick')} for {h.get('seconds')} s, shown again at tick {h.get('shown_at_tick')}")
for s in h.get("samples", []):
    print(f"  {s[0]:7.1f} s  {s[1]}  tick {s[2]}  exit {s[3]}  served hidden {s[4]} times")
print(f"clock: {page.get('clock')}; served hidden {page.get('hidden_serves')} times; rejoins {page.get('rejoins')}; "
      f"rejoins on being shown {page.get('shown_rejoins')}")
print(f"the page's exit {page['exit']}, its end: {page['figures'].get('end_message')}")
print(f"inputs the server filled for it: {seat['fills']}; dropped for silence: {'silent for' in open(f'{w}/server.err').read()}")
log = page.get("hashes", "")
open(f"{w}/page.log", "w").write(log)
srv = open(f"{w}/server.log").read()
print(f"hashes: {'every one the server' + chr(39) + 's' if log and srv.endswith(log) or log == srv else 'DIFFER'} ({len(log.splitlines())} of {len(srv.splitlines())})")
PY
