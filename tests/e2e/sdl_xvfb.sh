#!/usr/bin/env bash
# The SDL window in a real X server (Xvfb): the client plays a short session in a window and its
# hash log equals the server's. Says plainly when SDL2 was not built.
source "$(dirname "$0")/lib.sh" "$1"
if "$BIN/lockstep-client" --render sdl --connect 127.0.0.1:1 2>&1 | grep -q 'no SDL2'; then
  echo "SKIPPED: this build has no SDL2"; exit 77  # ctest reports it as skipped
fi
command -v Xvfb >/dev/null || fail "Xvfb is not installed (./quickstart installs it)"
DISP=:$(( 50 + RANDOM % 400 ))
Xvfb "$DISP" -screen 0 1024x1024x24 -nolisten tcp >/dev/null 2>&1 &
PIDS+=($!)
sleep 1
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 400 --hash-log "$WORK/server.log" >/dev/null 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot bot 1; A=$BOT_PID
DISPLAY=$DISP "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name window --bot 2 --render sdl --fps 60 --hash-log "$WORK/window.log" >/dev/null 2>"$WORK/window.err" &
W=$!; PIDS+=($W)
expect_exit $W 0 "sdl client"
expect_exit $A 0 bot
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/window.log" || fail "the window client's hash log differs"
echo "PASS: SDL window client in Xvfb kept in sync for 400 ticks"
