#!/usr/bin/env bash
# examples/embed-sdl as a studio meets it: built out of tree against an installed lockstep (with
# examples/orbits beside it), it runs its own loop at 144 frames a second in a real X server
# (Xvfb), passes orbits in-process as a module table, and draws orbits' own state at the
# client's alpha. It plays beside a stock bot, both through lockstep-netsim at 80 ms +- 15 ms one
# way, against the installed server hosting liborbits.so: hash-equal to the end, about 144
# frames a second, and fewer than 5 % of its frames resting at alpha 1.
source "$(dirname "$0")/lib.sh" "$1"
E2E_TIMEOUT=150
BUILD=$(cd "$BIN/.." && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX="$WORK/prefix"
command -v Xvfb >/dev/null || fail "Xvfb is not installed (./quickstart installs it)"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 || fail "cmake --install: $(tail -3 "$WORK/install.log")"
mkdir -p "$WORK/src"
cp -r "$SRC/examples/orbits" "$SRC/examples/embed-sdl" "$WORK/src/"
rm -rf "$WORK/src/orbits/build" "$WORK/src/embed-sdl/build"
for p in orbits embed-sdl; do
  cmake -S "$WORK/src/$p" -B "$WORK/$p" -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/$p-cfg.log" 2>&1 ||
    fail "configuring $p: $(tail -5 "$WORK/$p-cfg.log")"
  cmake --build "$WORK/$p" -j 2 >"$WORK/$p-build.log" 2>&1 || fail "building $p: $(tail -5 "$WORK/$p-build.log")"
done
echo "ok: examples/embed-sdl built against the prefix"
export LD_LIBRARY_PATH="$PREFIX/lib"
DISP=:$((90 + PORT % 100))
Xvfb "$DISP" -screen 0 800x800x24 -nolisten tcp >/dev/null 2>&1 &
PIDS+=($!)
sleep 0.5
"$PREFIX/bin/lockstep-server" --sim-lib "$WORK/orbits/liborbits.so" --port "$PORT" --players 2 --ticks 1000 \
    --hash-log "$WORK/server.log" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
for i in 1 2; do
  "$PREFIX/bin/lockstep-netsim" --listen $((PORT + i)) --forward "127.0.0.1:$PORT" --delay 80 --jitter 15 --seed $i \
      >/dev/null 2>"$WORK/relay$i.err" &
  PIDS+=($!)
done
sleep 0.3
"$PREFIX/bin/lockstep-client" --sim-lib "$WORK/orbits/liborbits.so" --connect "127.0.0.1:$((PORT + 1))" --name bot --bot 1 \
    --hash-log "$WORK/bot.log" >/dev/null 2>"$WORK/bot.err" &
B=$!; PIDS+=($B)
DISPLAY=$DISP "$WORK/embed-sdl/embed-sdl" --connect "127.0.0.1:$((PORT + 2))" --name game --fps 144 \
    --hash-log "$WORK/game.log" >"$WORK/game.json" 2>"$WORK/game.err" &
G=$!; PIDS+=($G)
expect_exit $G 0 "the embedded game"
expect_exit $B 0 bot
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/bot.log" || fail "the bot's hashes differ"
cmp "$WORK/server.log" "$WORK/game.log" || fail "the embedded game's hashes differ"
[ "$(tail -n1 "$WORK/game.log" | cut -d' ' -f1)" = 1000 ] || fail "the embedded game did not reach tick 1000"
json_check "$WORK/game.json" 'd["exit"] == 0 and d["fps"] > 100 and d["alpha_clamped_share"] < 0.05' \
  "the game's frame rate or its smooth view: $(cat "$WORK/game.json")"
echo "embed-sdl: $(cat "$WORK/game.json")"
echo "PASS: an out-of-tree SDL game on the embedding API at 144 fps, its own state drawn, hash-equal at 80 ms one way"
