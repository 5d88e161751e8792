#!/usr/bin/env bash
# Prediction for games that own their state (mode b, GGPO's model on the game's one state): the C
# game (lockstep-c-player), the Python game (tests/embed/py_player.py, on the Python package) and
# the C# game (tests/embed/cs_player.cs, on the C# binding under Mono), each with --predict 100
# (a second of play: more than the lead and the one-way delay), play beside a stock bot, each
# through its own lockstep-netsim at 250 ms +- 10 ms one way with 3 % loss. After every update the game's own
# state must be the predicted world (it checks, each frame it draws); its input reaches its screen
# within one tick and one frame (p99, 10 ms + 16.7 ms of its 60 Hz loop), counted to the frame's
# presentation (a frame after its draw), so at least the loop's frame at p50; the prediction keeps
# the depth its lead needs (the adaptive step budget: about 55 ticks at 250 ms one way, a Python
# step costs near half a millisecond here); a confirmed tick that
# was predicted right costs no callback (its state is the prediction's save), so loads come only
# with mispredictions; and its confirmed hashes equal the server's and the bot's to the last tick.
source "$(dirname "$0")/lib.sh" "$1"
E2E_TIMEOUT=100
walkers_games
# The identity a game that owns its state presents, from the module itself: the C call (here from
# Python, as a game would) and the tool give the build id that lockstep_add_module derived.
got=$(py_with_lib - "$LIBDIR" "$LIB" <<'PY'
import ctypes as C, sys
C.CDLL(sys.argv[1] + "/liblockstep_core.so.0", mode=C.RTLD_GLOBAL)
lib = C.CDLL(sys.argv[1] + "/liblockstep_net.so.0")
lib.lockstep_module_build_id.restype = C.c_uint64
lib.lockstep_module_build_id.argtypes = [C.c_void_p]
lib.lockstep_module_name.restype = C.c_char_p
lib.lockstep_module_name.argtypes = [C.c_void_p]
m, err = C.c_void_p(), C.create_string_buffer(256)
if lib.lockstep_module_load(sys.argv[2].encode(), C.byref(m), err, 256) != 0:
    sys.exit("lockstep_module_load: " + err.value.decode())
print("%s %016x" % (lib.lockstep_module_name(m).decode(), lib.lockstep_module_build_id(m)))
PY
)
[ "$got" = "walkers $(printf %016x "$BID")" ] || fail "lockstep_module_build_id gave '$got', the build's walkers build id is $BID"
"$BIN/lockstep-synctest" --sim-lib "$LIB" --describe >"$WORK/describe.json" || fail "lockstep-synctest --describe"
json_check "$WORK/describe.json" "int(d['build_id'], 16) == $BID and d['name'] == 'walkers'" "--describe does not give the module's build id"
TICKS=1500
"$BIN/lockstep-server" --sim-lib "$LIB" --port "$PORT" --players 4 --ticks $TICKS \
    --hash-log "$WORK/server.log" --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
cs_ready || { echo "SKIPPED: needs Mono (mono-mcs, mono-runtime) and a build without AddressSanitizer"; exit 77; }
for i in 1 2 3 4; do
  "$BIN/lockstep-netsim" --listen $((PORT + i)) --forward "127.0.0.1:$PORT" --delay 250 --jitter 10 --loss 3 --seed $i \
      --summary "$WORK/relay$i.json" 2>"$WORK/relay$i.err" &
  PIDS+=($!)
done
sleep 0.3
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$((PORT + 1))" --name bot --bot 1 --hash-log "$WORK/bot.log" \
    >/dev/null 2>"$WORK/bot.err" &
B=$!; PIDS+=($B)
"$BIN/lockstep-c-player" 127.0.0.1 $((PORT + 2)) cgame 2 "$WORK/c.log" --predict 100 2>"$WORK/c.err" &
C=$!; PIDS+=($C)
py_with_lib "$(dirname "$0")/../embed/py_player.py" "$LIBDIR" 127.0.0.1 $((PORT + 3)) pygame 3 "$WORK/py.log" "$BID" \
    --predict 100 2>"$WORK/py.err" &
P=$!; PIDS+=($P)
cs_with_lib "$BIN/cs_player.exe" 127.0.0.1 $((PORT + 4)) csgame 4 "$WORK/cs.log" "$BID" --predict 100 2>"$WORK/cs.err" &
CS=$!; PIDS+=($CS)
expect_exit $C 0 "the predicting C game"
expect_exit $CS 0 "the predicting C# game"
expect_exit $P 0 "the predicting Python game"
expect_exit $B 0 bot
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/bot.log" || fail "the bot's hashes differ"
cmp "$WORK/server.log" "$WORK/c.log" || fail "the predicting C game's confirmed hashes differ: $(cmp "$WORK/server.log" "$WORK/c.log")"
cmp "$WORK/server.log" "$WORK/py.log" || fail "the predicting Python game's confirmed hashes differ: $(cmp "$WORK/server.log" "$WORK/py.log")"
cmp "$WORK/server.log" "$WORK/cs.log" || fail "the predicting C# game's confirmed hashes differ: $(cmp "$WORK/server.log" "$WORK/cs.log")"
[ "$(tail -n1 "$WORK/c.log" | cut -d' ' -f1)" = $TICKS ] || fail "the C game did not reach $TICKS"
for game in c_player:c.err py_player:py.err cs_player:cs.err; do
  line=$(grep "${game%%:*}: prediction:" "$WORK/${game#*:}")
  [ -n "$line" ] || fail "${game%%:*} gave no prediction figures"
  echo "$line"
  python3 - "$line" <<'PY' || fail "${game%%:*}'s prediction figures miss: $line"
import re, sys
line = sys.argv[1]
num = lambda pat: float(re.search(pat, line).group(1))
draws, not_pred, ahead = num(r"(\d+) draws"), num(r"(\d+) not of the predicted"), num(r"(\d+) ahead")
p50, p99 = num(r"p50 ([\d.]+) ms"), num(r"p99 ([\d.]+) ms")
lowest = num(r"lowest (\d+)")
wrong, verified = (float(x) for x in re.search(r"(\d+) of (\d+) predictions wrong", line).groups())
steps, saves, loads, reused = (float(x) for x in re.search(
    r"([\d.]+) steps, ([\d.]+) saves, ([\d.]+) loads, ([\d.]+) reused", line).groups())
ok = True
def need(cond, what):
    global ok
    if not cond:
        print("FAIL:", what); ok = False
need(draws > 500 and not_pred == 0, "every frame drawn shows the predicted world")
# Draws in which the prediction had not (yet) run ahead: 2-4 % on an idle machine, 18 % in one CI
# run beside the matrix's and the fuzzer's builds; the bound is that it runs ahead in most of them.
need(ahead > 0.75 * draws, "the predicted world runs ahead of the confirmed one")
need(p99 <= 10 + 16.7, "own input on screen within one tick and one frame (p99)")
need(p50 >= 3.5, "own input counted to its frame's presentation, a frame after the draw (p50)")
final = num(r"depth (\d+) \(lowest")
# Its depth never fell below what the lead needs, or it came back up (a busy machine makes steps
# dear for a while); a fixed 8 ms budget took it to 29 and kept it there.
need(lowest >= 45 or final == 100, "the prediction keeps the depth its lead needs, or recovers it (lowest after 3 s, at the end)")
need(reused <= 1.0, "reused counts confirmed ticks only, at most one each")
need(verified > 1000, "confirmed ticks were predicted")
need(reused >= 0.9, "a confirmed tick predicted right takes the prediction's state without a callback")
# Loads only roll back: about one per misprediction or rebuild (and one for the join's snapshot).
# On an idle machine the rebuilds are the mispredictions; on a busy one the depth is cut now and
# then, and each cut rebuilds the predicted world too (one run beside two CPU hogs: 102 wrong, 125
# rebuilds, 150 loads). A load every tick, the fault this guards against, is 1500.
rebuilds = num(r"(\d+) rebuilds")
need(loads * 1500 <= wrong + rebuilds + 5, "loads only after mispredictions and rebuilds")
sys.exit(0 if ok else 1)
PY
done
# The view from the first tick to the last: it moves within a few frames of STARTED (it sat at tick 0
# for 0.72 s at 250 ms, until the first confirmed frame, then jumped 68 ticks), steps a few ticks a
# frame at most, and never draws a tick past the session's last.
view=$(grep "c_player: view:" "$WORK/c.err")
echo "$view"
python3 - "$view" $TICKS <<'PY' || fail "the C game's view does not run from the start to the end: $view"
import re, sys
m = re.search(r"first move ([\d.]+) ms after STARTED, largest jump (\d+) ticks, highest tick drawn (\d+)", sys.argv[1])
first, jump, highest = float(m.group(1)), int(m.group(2)), int(m.group(3))
ok = first <= 150 and jump <= 12 and highest <= int(sys.argv[2])
sys.exit(0 if ok else 1)
PY
echo "PASS: predicting games (C, Python, C#) that own their state draw the predicted world, see their input within a tick and a frame at 250 ms, and stay hash-equal"
