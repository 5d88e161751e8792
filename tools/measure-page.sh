#!/usr/bin/env bash
# The viewer page's load time in Chromium for a desync bundle of a 10 000-entity world (issue
# figure: at most 1 s). A real session: the arena with 10 000 bodies, two bots, one perturbed at
# tick 300; the server's bundle becomes a page (lockstep-replay view), opened ROUNDS times in
# headless Chromium; the page records performance.now() when its script has drawn everything
# (data-render-ms: from the start of navigation, parsing the embedded data included).
# Usage: tools/measure-page.sh [BIN_DIR] [ROUNDS]   (prints the median and every round)
set -u
BIN=${1:-build/bin}
ROUNDS=${2:-7}
WORK=$(mktemp -d /tmp/lockstep-page.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
PORT=$((27000 + RANDOM % 500))
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 400 --bodies 10000 --on-desync stop --desync-dir "$WORK" \
  >/dev/null 2>"$WORK/server.err" &
S=$!
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name honest --bot 1 >/dev/null 2>&1 &
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name cheat --bot 2 --inject-desync-at 300 >/dev/null 2>&1 &
wait $S
B=$(ls "$WORK"/desync-300-*.bundle 2>/dev/null | head -1)
[ -n "$B" ] || { echo "no bundle: $(tail -3 "$WORK/server.err")"; exit 1; }
"$BIN/lockstep-replay" view "$B" -o "$WORK/page.html" >/dev/null || exit 1
echo "bundle $(stat -c %s "$B") bytes, page $(stat -c %s "$WORK/page.html") bytes"
times=()
for i in $(seq "$ROUNDS"); do
  dom=$(timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/chrome" \
        --dump-dom "file://$WORK/page.html" 2>/dev/null)
  ms=$(grep -o 'data-render-ms="[0-9.]*"' <<<"$dom" | grep -o '[0-9.]*')
  status=$(grep -o 'data-status="[a-z]*"' <<<"$dom")
  [ "$status" = 'data-status="ok"' ] || { echo "round $i: the page did not render ($status)"; exit 1; }
  times+=("$ms")
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "page load (render done), median of %d: %s ms (rounds:", NR, a[int((NR+1)/2)]; for (i=1;i<=NR;i++) printf " %s", a[i]; print ")"}'
