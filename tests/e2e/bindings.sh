#!/usr/bin/env bash
# The bindings as a studio meets them (bindings/python: import lockstep; bindings/csharp under
# Mono). Their layout checks can fail: a copy of the Python package with two fields of
# lockstep_game swapped refuses to import, and the C# check refuses a lockstep_game with two
# fields in each other's places and a lockstep_event a byte short. Wrong arguments are the
# language's own errors carrying lockstep's sentence. A game whose step raises (Python at tick 300)
# or throws (C# at tick 400) ends its own session with exit 1 and an ENDED event saying the game's
# callback failed, while the server and a stock bot play on to the last tick, hash-equal.
source "$(dirname "$0")/lib.sh" "$1"
E2E_TIMEOUT=60
walkers_games
PKG="$(cd "$(dirname "$0")/../../bindings/python" && pwd)"

# Python: the layout check, on a copy of the package with version and input_size swapped.
py_with_lib -c 'import lockstep; print("python binding", lockstep.version(), "API", lockstep.api_version())' ||
  fail "the Python package does not import"
mkdir -p "$WORK/badpkg" && cp -r "$PKG/lockstep" "$WORK/badpkg/"
python3 - "$WORK/badpkg/lockstep/__init__.py" <<'PY' || fail "the swap did not apply"
import sys
p = sys.argv[1]
s = open(p).read()
a, b = '("version", C.c_uint32)', '("input_size", C.c_uint32)'
i = s.index("class _Game")
j = s.index("class _Config")
part = s[i:j]
assert part.count(a) == 1 and part.count(b) == 1
part = part.replace(a, "@A@").replace(b, a).replace("@A@", b)
open(p, "w").write(s[:i] + part + s[j:])
PY
out=$(PY_PATH="$WORK/badpkg" py_with_lib -c 'import lockstep' 2>&1) && fail "a package with a wrong lockstep_game imported"
echo "$out" | grep -Eq "ImportError: lockstep: lockstep_game.input_size is at [0-9]+ \(4 bytes\) here, at [0-9]+" || fail "the refusal does not name the field: $out"
echo "ok: python: a lockstep_game laid out otherwise than the library's is refused at import"
# Python: wrong arguments raise lockstep.Error (a ValueError) with the library's sentence.
py_with_lib - <<'PY' || fail "the Python package's errors"
import lockstep
class G(lockstep.Game):
    name, version, build_id, input_size = "walkers", 1, 1, 2
try:
    lockstep.Client(name="a\tb", game=G())
    raise SystemExit("a bad name was taken")
except lockstep.Error as e:
    assert "name" in str(e) and isinstance(e, ValueError), e
try:
    lockstep.Client(game=G(), module=lockstep.module_builtin("arena"))
    raise SystemExit("both a module and a game were taken")
except lockstep.Error as e:
    assert "exactly one" in str(e), e
try:
    lockstep.module_builtin("nonesuch")
    raise SystemExit("an unknown module was found")
except lockstep.Error as e:
    assert e.code == 2, e.code
c = lockstep.Client(module=lockstep.module_builtin("arena"), connect_timeout_ms=100)
try:
    c.set_input(b"\0" * 100)
    raise SystemExit("a 100-byte input was taken")
except lockstep.Error:
    pass
try:
    c.set_input("text")
    raise SystemExit("a str input was taken")
except TypeError:
    pass
c.close()
print("ok: python: bad arguments raise lockstep.Error with the library's sentence")
PY
# Two implementations of one game: the Python walkers beside the module the server hosts
# (lockstep_compare_game): equal; then with one rule changed from tick 137 on, named by tick,
# entity and field.
py_with_lib - "$LIB" "$BID" "$(dirname "$0")/../embed" <<'PY' || fail "lockstep.compare_game"
import sys
sys.path.insert(0, sys.argv[3])
import lockstep
from py_player import WalkersGame
module = lockstep.module_load(sys.argv[1])
assert (module.name, module.version, module.build_id) == ("walkers", 1, int(sys.argv[2], 16)), module.build_id
ok, report = lockstep.compare_game(module, WalkersGame(module.build_id, 0, 0), ticks=400)
print("python, as written:", report)
assert ok, report
class Drifting(WalkersGame):  # a port that rounds the damping the other way from tick 137
    def step(self, frame):
        super().step(frame)
        if frame.tick >= 137 and self.world.vel[0] < 0:
            self.world.vel[0] += 1
ok, report = lockstep.compare_game(module, Drifting(module.build_id, 0, 0), ticks=400)
print("python, drifting:", report)
assert not ok and " tick 137: entity 0 field vel: module " in report, report
ok, report = lockstep.compare_game(module, WalkersGame(module.build_id + 1, 0, 0), ticks=10)
assert not ok and "the identity differs" in report, report
print("ok: python: lockstep.compare_game finds the two implementations equal, then names tick 137, entity 0, field vel")
PY
# The same on a recorded session, with its keyframes (lockstep_bisect_game): the Python walkers
# agree with the module throughout; a port drifting from tick 4321 on is found there, simulating
# fewer ticks than a linear search.
"$BIN/lockstep-replay" --sim-lib "$LIB" record-scenario "$WORK/walkers.replay" --ticks 6000 --keyframe-every 2 \
  2>"$WORK/record.err" || fail "record-scenario of walkers"
py_with_lib - "$LIB" "$BID" "$(dirname "$0")/../embed" "$WORK/walkers.replay" <<'PY' || fail "lockstep.bisect_game"
import re, sys
sys.path.insert(0, sys.argv[3])
import lockstep
from py_player import WalkersGame
module = lockstep.module_load(sys.argv[1])
ok, report = lockstep.bisect_game(module, WalkersGame(module.build_id, 0, 0), sys.argv[4])
print("python, as written:", report)
assert ok, report
class Drifting(WalkersGame):  # the damping rounded the other way from tick 4321 on
    def step(self, frame):
        super().step(frame)
        if frame.tick >= 4321 and self.world.vel[0] < 0:
            self.world.vel[0] += 1
ok, report = lockstep.bisect_game(module, Drifting(module.build_id, 0, 0), sys.argv[4])
print("python, drifting:", report)
m = re.search(r"parted at tick (\d+): entity 0 field vel: .*?(\d+) ticks simulated.*a linear search: (\d+)", report)
assert not ok and m and int(m.group(1)) >= 4321, report
assert int(m.group(2)) < int(m.group(3)), report
ok, linear = lockstep.bisect_game(module, Drifting(module.build_id, 0, 0), sys.argv[4], linear=True)
assert not ok and ("parted at tick %s:" % m.group(1)) in linear, linear
try:
    lockstep.bisect_game(module, WalkersGame(module.build_id, 0, 0), sys.argv[4] + ".missing")
    raise SystemExit("a missing replay was taken")
except lockstep.Error as e:
    assert "cannot open" in str(e), e
print("ok: python: lockstep.bisect_game finds a port drifting from tick 4321 at tick %s" % m.group(1))
open(sys.argv[4] + ".parted", "w").write(m.group(1))
PY
PY_PARTED=$(cat "$WORK/walkers.replay.parted")
# Two implementations with no module at all (lockstep_game_trace_write / _compare): the C game
# writes its trace over lockstep's streams; the Python and C# ports compare against it, equal as
# written, and a port drifting from tick 137 is named at its first differing tick, entity and field.
"$BIN/lockstep-c-player" --trace-write "$WORK/walkers.trace" >"$WORK/trace.out" 2>"$WORK/trace.err" ||
  fail "the C game's trace: $(cat "$WORK/trace.out")"
grep -q "3 variants, 400 ticks each" "$WORK/trace.out" || fail "the C game's trace: $(cat "$WORK/trace.out")"
py_with_lib - "$WORK/walkers.trace" "$BID" "$(dirname "$0")/../embed" <<'PY' || fail "lockstep.compare_trace"
import re, sys
sys.path.insert(0, sys.argv[3])
import lockstep
from py_player import WalkersGame
bid = int(sys.argv[2], 16)
ok, report = lockstep.compare_trace(WalkersGame(bid, 0, 0), sys.argv[1])
print("python against the C game's trace:", report)
assert ok, report
class Drifting(WalkersGame):
    def step(self, frame):
        super().step(frame)
        if frame.tick >= 137 and self.world.vel[0] < 0:
            self.world.vel[0] += 1
ok, report = lockstep.compare_trace(Drifting(bid, 0, 0), sys.argv[1])
m = re.search(r"tick (\d+): entity 0 field vel: 0x[0-9a-f]+ vs 0x[0-9a-f]+ \(trace vs this game\)", report)
assert not ok and m and int(m.group(1)) >= 137, report
try:
    lockstep.compare_trace(WalkersGame(bid, 0, 0), sys.argv[3] + "/py_player.py")
    raise SystemExit("a file that is no trace was taken")
except lockstep.Error as e:
    assert "not a lockstep game trace" in str(e), e
# and the other way round: the Python port's trace, the same bytes as the C game's
own = sys.argv[1] + ".py"
lockstep.trace_game(WalkersGame(bid, 0, 0), own, ticks=400, players=4)
assert open(own, "rb").read() == open(sys.argv[1], "rb").read(), "the Python port's trace differs from the C game's"
print("ok: python: equal to the C game's trace, its own trace byte-equal to it; a port drifting from 137 named at tick", m.group(1))
PY
if cs_ready; then
  cs_with_lib "$BIN/cs_layout_check.exe" || fail "the C# binding's layout check"
  # The C# walkers beside the module: equal; drifting from tick 137, named there.
  out=$(cs_with_lib "$BIN/cs_player.exe" --compare "$LIB") || fail "C# CompareGame: $out"
  echo "$out" | grep -q "equal: 3 variants" || fail "C# CompareGame: $out"
  out=$(cs_with_lib "$BIN/cs_player.exe" --compare "$LIB" --drift-at 137); rc=$?
  [ $rc = 3 ] && echo "$out" | grep -q " tick 137: entity 0 field vel: module " || fail "C# CompareGame of a drifting port (exit $rc): $out"
  echo "ok: C#: CompareGame finds the two implementations equal, then names tick 137, entity 0, field vel"
  out=$(cs_with_lib "$BIN/cs_player.exe" --bisect "$LIB" "$WORK/walkers.replay") || fail "C# BisectGame: $out"
  out=$(cs_with_lib "$BIN/cs_player.exe" --bisect "$LIB" "$WORK/walkers.replay" --drift-at 4321); rc=$?
  [ $rc = 3 ] && echo "$out" | grep -q "parted at tick $PY_PARTED: entity 0 field vel" \
    || fail "C# BisectGame of a drifting port (exit $rc), not at tick $PY_PARTED as in Python: $out"
  echo "ok: C#: BisectGame finds the port drifting from tick 4321 where Python's does"
  out=$(cs_with_lib "$BIN/cs_player.exe" --compare-trace "$WORK/walkers.trace" "$BID") || fail "C# CompareTrace: $out"
  echo "$out" | grep -q "equal: 3 variants" || fail "C# CompareTrace: $out"
  out=$(cs_with_lib "$BIN/cs_player.exe" --compare-trace "$WORK/walkers.trace" "$BID" --drift-at 137); rc=$?
  [ $rc = 3 ] && echo "$out" | grep -Eq "tick (13[7-9]|1[4-9][0-9]): entity 0 field vel: .* \(trace vs this game\)" ||
    fail "C# CompareTrace of a drifting port (exit $rc): $out"
  echo "ok: C#: CompareTrace against the C game's trace: equal as written; the drifting port named: ${out#cs_player: compare-trace: }"
  # No garbage per step from the binding: 60 000 steps of a game that allocates nothing. The binding
  # once made a Frame, its arrays and a copy of the state per step: 34 gen-0 collections in 30 s.
  out=$(cs_with_lib "$BIN/cs_player.exe" --alloc-check "$WORK/counter.trace" 20000) || fail "C# alloc-check: $out"
  echo "$out"
  n=$(echo "$out" | sed -n 's/.*steps, \([0-9]*\) gen-0 collections.*/\1/p')
  [ -n "$n" ] && [ "$n" -le 1 ] || fail "the C# binding allocates per step: $out"
  # A missing library is named, with where the runtime looked.
  out=$(env -u LD_LIBRARY_PATH mono "$BIN/cs_player.exe" --alloc-check "$WORK/none.trace" 10 2>&1) && fail "C# ran without its library"
  echo "$out" | grep -q "DllNotFoundException: lockstep: cannot load liblockstep_net.so" ||
    fail "a missing library is not named: $(echo "$out" | head -3)"
  echo "ok: C#: no allocation per step ($n gen-0 collections in 60 000), a missing library named"
else
  echo "C#: skipped (needs Mono, and a build without AddressSanitizer)"
fi

# A game whose callback fails ends its own session; nobody else's.
"$BIN/lockstep-server" --sim-lib "$LIB" --port "$PORT" --players 3 --ticks 800 \
    --hash-log "$WORK/server.log" --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
sleep 0.3
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$PORT" --name bot --bot 1 --hash-log "$WORK/bot.log" \
    >/dev/null 2>"$WORK/bot.err" &
B=$!; PIDS+=($B)
py_with_lib "$(dirname "$0")/../embed/py_player.py" "$LIBDIR" 127.0.0.1 "$PORT" pygame 3 "$WORK/py.log" "$BID" --raise-at 300 \
    2>"$WORK/py.err" &
P=$!; PIDS+=($P)
if cs_ready; then
  cs_with_lib "$BIN/cs_player.exe" 127.0.0.1 "$PORT" csgame 4 "$WORK/cs.log" "$BID" --raise-at 400 2>"$WORK/cs.err" &
  CS=$!; PIDS+=($CS)
else
  "$BIN/lockstep-c-player" 127.0.0.1 "$PORT" cgame 2 "$WORK/c.log" 2>"$WORK/c.err" &  # the third seat
  CS=""; PIDS+=($!)
fi
expect_exit $P 1 "the Python game whose step raised"
grep -q "event 8 tick .*the game's callback failed: the game's step() failed at tick 300: RuntimeError: the game broke at tick 300" "$WORK/py.err" ||
  fail "the Python game's ENDED event does not say its callback failed: $(grep event "$WORK/py.err" | tail -2)"
grep -q "the game raised: RuntimeError('the game broke at tick 300')" "$WORK/py.err" || fail "the Python game's exception was not kept"
if [ -n "$CS" ]; then
  expect_exit $CS 1 "the C# game whose Step threw"
  grep -q "event 8 Ended .*the game's callback failed: the game's step() failed at tick 400: InvalidOperationException: the game broke at tick 400" "$WORK/cs.err" ||
    fail "the C# game's Ended event does not say its callback failed: $(grep event "$WORK/cs.err" | tail -2)"
  grep -q "the game threw: the game broke at tick 400" "$WORK/cs.err" || fail "the C# game's exception was not kept"
  grep -q "refused as it should be: name" "$WORK/cs.err" || fail "the C# binding took a bad name: $(head -3 "$WORK/cs.err")"
fi
expect_exit $B 0 bot
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/bot.log" || fail "the bot's hashes differ"
[ "$(tail -n1 "$WORK/server.log" | cut -d' ' -f1)" = 800 ] || fail "the session did not play on to 800"
# The other players hear why: the game's own words as the reason its player left.
grep -q "left (the game's callback failed: the game's step() failed at tick 300: RuntimeError: the game broke at tick 300)" "$WORK/bot.err" ||
  fail "the bot was not told why the Python game left: $(grep -i 'pygame\|player 1\|player 2' "$WORK/bot.err" | tail -3)"
if [ -n "$CS" ]; then
  grep -q "left (the game's callback failed: the game's step() failed at tick 400: InvalidOperationException: the game broke at tick 400)" "$WORK/bot.err" ||
    fail "the bot was not told why the C# game left: $(grep -i 'left\|disconnected' "$WORK/bot.err" | tail -3)"
fi

# A Python game whose reset fails by C's convention (returns 1) ends before playing, saying so.
"$BIN/lockstep-server" --sim-lib "$LIB" --port $((PORT + 7)) --players 1 --ticks 300 2>"$WORK/server2.err" &
S2=$!; PIDS+=($S2)
sleep 0.3
py_with_lib - "$PORT" "$BID" "$(dirname "$0")/../embed" <<'PY' || fail "a Python game whose reset returns 1"
import sys, time
sys.path.insert(0, sys.argv[3])
import lockstep
from py_player import WalkersGame
class Unbuilt(WalkersGame):
    def reset(self, settings, players):
        return 1
c = lockstep.Client("127.0.0.1", int(sys.argv[1]) + 7, "unbuilt", game=Unbuilt(int(sys.argv[2], 16), 0, 0))
ended, deadline = None, time.monotonic() + 20
while not c.finished and time.monotonic() < deadline:
    c.update()
    ended = next((e for e in c.events() if e.kind == 8), ended)
    time.sleep(0.005)
ended = next((e for e in c.events() if e.kind == 8), ended)
assert c.finished and c.exit_code == 1, (c.finished, c.exit_code)
assert ended and "the game's reset() returned 1 for 1 players" in ended.detail, ended
print("ok: python: a reset that returns 1 ends the session:", ended.detail)
PY
if cs_ready; then
  # The C# log sink: the library's lines go to the game's Action, not stderr (a join, then a leave).
  out=$(cs_with_lib "$BIN/cs_player.exe" --log-check $((PORT + 7)) "$LIB" 2>"$WORK/log-check.err") || fail "C# log-check: $out"
  echo "$out" | grep -Eq "exit 0, [1-9][0-9]* lines into the sink; first: 1 joined as player" || fail "C# log sink: $out"
  [ ! -s "$WORK/log-check.err" ] || fail "the C# client logged to stderr with a sink set: $(head -3 "$WORK/log-check.err")"
  echo "ok: C#: the log sink: $out"
fi
kill $S2 2>/dev/null
echo "PASS: the bindings refuse layouts not the library's, raise the language's errors with lockstep's sentence, and a game that fails ends only its own session"
