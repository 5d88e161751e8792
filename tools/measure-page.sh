#!/usr/bin/env bash
# The viewer page's size and load time in Chromium: for the desync bundle of a real session (the
# arena with BODIES bodies, two bots, one perturbed at tick 300; the server's bundle becomes a page
# with lockstep-replay view) and for a one-hour replay (the arena's golden scenario, 360 000
# ticks, a keyframe every 10 s). Each page is opened ROUNDS times in headless Chromium; the page
# records performance.now() when its script is done (data-render-ms: from the start of navigation,
# parsing the HTML, its SVG and the embedded data included).
# Usage: tools/measure-page.sh [BIN_DIR] [ROUNDS] [BODIES...]   (default bodies: 2000 and 10000)
set -u
BIN=${1:-build/bin}
ROUNDS=${2:-7}
shift $(( $# > 2 ? 2 : $# ))
BODIES=("$@")
[ ${#BODIES[@]} -gt 0 ] || BODIES=(2000 10000)
WORK=$(mktemp -d /tmp/lockstep-page.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT

load_times() {  # load_times PAGE LABEL
  local page=$1 label=$2 times=() i dom ms status
  for i in $(seq "$ROUNDS"); do
    dom=$(timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/chrome" \
          --dump-dom "file://$page" 2>/dev/null)
    ms=$(grep -o 'data-render-ms="[0-9.]*"' <<<"$dom" | grep -o '[0-9.]*')
    status=$(grep -o 'data-status="[a-z]*"' <<<"$dom")
    [ "$status" = 'data-status="ok"' ] || { echo "$label, round $i: the page did not render ($status)"; exit 1; }
    times+=("$ms")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v label="$label" -v size="$(stat -c %s "$page")" \
    '{a[NR]=$1} END {printf "%s: page %d bytes, load (script done) median of %d: %s ms (rounds:", label, size, NR, a[int((NR+1)/2)]; for (i=1;i<=NR;i++) printf " %s", a[i]; print ")"}'
}

for bodies in "${BODIES[@]}"; do
  PORT=$((27000 + RANDOM % 500))
  mkdir -p "$WORK/$bodies"
  "$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 400 --bodies "$bodies" --on-desync stop --desync-dir "$WORK/$bodies" \
    >/dev/null 2>"$WORK/server.err" &
  S=$!
  "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name honest --bot 1 >/dev/null 2>&1 &
  "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name cheat --bot 2 --inject-desync-at 300 >/dev/null 2>&1 &
  wait $S
  B=$(ls "$WORK/$bodies"/desync-300-*.bundle 2>/dev/null | head -1)
  [ -n "$B" ] || { echo "no bundle: $(tail -3 "$WORK/server.err")"; exit 1; }
  "$BIN/lockstep-replay" view "$B" -o "$WORK/$bodies/page.html" >/dev/null || exit 1
  load_times "$WORK/$bodies/page.html" "desync bundle, $bodies bodies (bundle $(stat -c %s "$B") bytes)"
done
"$BIN/lockstep-replay" record-scenario "$WORK/hour.replay" --ticks 360000 --keyframe-every 10 2>/dev/null || exit 1
"$BIN/lockstep-replay" view "$WORK/hour.replay" -o "$WORK/hour.html" >/dev/null || exit 1
load_times "$WORK/hour.html" "one-hour replay (replay $(stat -c %s "$WORK/hour.replay") bytes)"
