#!/usr/bin/env bash
# A physics engine under lockstep (examples/crates, on Debian's Box2D):
# - the naive design (one b2World kept for the session, loaded by rebuilding it) passes the clone
#   and round-trip checks but fails synctest's history and rollback checks, each naming the tick,
#   the entity and the field at defaults;
# - the design that rebuilds the world from its bytes every tick plays a session through
#   lockstep-netsim (80 ms one way, 3 % loss) with a late joiner loaded from a snapshot, all
#   hash-equal to the end;
# - a player whose libbox2d is another build (here Debian's with its build id changed, as an
#   aarch64 or self-built copy would differ) is refused at join, the library named; with Box2D
#   opted out of the fingerprint it is refused by its machine code instead, and plays, hash-equal,
#   once a gate report lists both builds.
# Usage: physics.sh BIN_DIR LIBCRATES LIBCRATES_NAIVE LIBCRATES_UNCOVERED
source "$(dirname "$0")/lib.sh" "$1"
CRATES=$2 NAIVE=$3 UNCOVERED=$4
[ -f "$CRATES" ] && [ -f "$NAIVE" ] || fail "the crates modules are missing: $CRATES $NAIVE"

"$BIN/lockstep-synctest" --sim-lib "$NAIVE" --ticks 300 --report "$WORK/naive.json" 2>"$WORK/naive.err"
rc=$?; [ $rc = 3 ] || fail "the naive Box2D module should fail synctest (exit 3), got $rc"
json_check "$WORK/naive.json" '[c for c in d["checks"] if c["check"] == "history" and not c["ok"] and c["entity"] >= 0 and c["field"] in ("x", "y", "angle", "vx", "vy", "w")]' \
  "the history check names the entity and field of the naive module"
json_check "$WORK/naive.json" '[c for c in d["checks"] if c["check"] == "rollback" and not c["ok"] and c["entity"] >= 0 and c["field"]]' \
  "the rollback check names the entity and field at defaults"
json_check "$WORK/naive.json" 'all(c["ok"] for c in d["checks"] if c["check"] in ("roundtrip", "clone", "assign", "replay"))' \
  "the naive module passes the checks that cannot see a world's history"
echo "ok: naive design: $(json_get "$WORK/naive.json" '[c["detail"][:90] + "... entity %d %s" % (c["entity"], c["field"]) for c in d["checks"] if c["check"] == "history"][0]')"

"$BIN/lockstep-synctest" --sim-lib "$CRATES" --ticks 300 --report "$WORK/crates.json" 2>"$WORK/crates.err" ||
  fail "the rebuilding Box2D module should pass every synctest check"
echo "ok: the rebuilding design passes every check, history included"

# A session: two players, one far and lossy, and a third who leaves at tick 200 and whose seat a
# late joiner takes, served a snapshot.
"$BIN/lockstep-server" --port "$PORT" --players 3 --ticks 900 --sim-lib "$CRATES" --allow-late-join \
    --hash-log "$WORK/server.log" --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
"$BIN/lockstep-netsim" --listen $((PORT + 1)) --forward "127.0.0.1:$PORT" --delay 80 --jitter 10 --loss 3 --seed 7 \
    2>"$WORK/ns.err" &
NS=$!; PIDS+=($NS)
start_bot near 1 --sim-lib "$CRATES"; A=$BOT_PID
"$BIN/lockstep-client" --connect "127.0.0.1:$((PORT + 1))" --name far --bot 2 --sim-lib "$CRATES" \
    --hash-log "$WORK/far.log" >/dev/null 2>"$WORK/far.err" &
B=$!; PIDS+=($B)
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name early --bot 4 --ticks 200 --sim-lib "$CRATES" \
    >/dev/null 2>"$WORK/early.err" &
E=$!; PIDS+=($E)
expect_exit $E 0 "early leaver"
for i in $(seq 200); do [ "$(wc -l <"$WORK/near.log" 2>/dev/null || echo 0)" -ge 300 ] && break; sleep 0.05; done
start_bot late 3 --sim-lib "$CRATES"; L=$BOT_PID
expect_exit $L 0 "late joiner"
expect_exit $A 0 "near player"
expect_exit $B 0 "far player"
expect_exit $S 0 server
kill -INT $NS; wait $NS
cmp -s "$WORK/server.log" "$WORK/near.log" || fail "the near player's hashes differ"
cmp -s "$WORK/server.log" "$WORK/far.log" || fail "the far player's hashes differ"
grep -Fxv -f "$WORK/server.log" "$WORK/late.log" | head -3 | grep -q . && fail "the late joiner's hashes differ"
[ "$(tail -n1 "$WORK/late.log" | cut -d' ' -f1)" = 900 ] || fail "the late joiner did not reach the end"
json_check "$WORK/server.json" 'd["joins_running"] == 1 and d["verified"] == 1' "the late joiner was not admitted and verified"

# Another build of libbox2d: the same file with other build-id bytes, found first by the player.
BOX2D=$(ldd "$CRATES" | awk '/libbox2d/ { print $3 }')
[ -f "$BOX2D" ] || fail "cannot find the libbox2d the module loads"
SONAME=$(basename "$(ldd "$CRATES" | awk '/libbox2d/ { print $1 }')")
mkdir -p "$WORK/other"
python3 - "$BOX2D" "$WORK/other/$SONAME" <<'PY' || fail "cannot make another build of libbox2d"
import re, subprocess, sys
src, dst = sys.argv[1], sys.argv[2]
note = subprocess.run(["readelf", "-n", src], capture_output=True, text=True).stdout
build = bytes.fromhex(re.search(r"Build ID: ([0-9a-f]+)", note).group(1))
data = open(src, "rb").read()
assert data.count(build) == 1
open(dst, "wb").write(data.replace(build, bytes(b ^ 0xff for b in build)))
PY
refused_join() {  # refused_join MODULE [SERVER OPTIONS]: a server and a player with the other libbox2d
  "$BIN/lockstep-server" --port $((PORT + 5)) --players 1 --ticks 300 --sim-lib "$1" --hash-log "$WORK/s2.log" "${@:2}" \
      >/dev/null 2>"$WORK/s2.err" &
  S2=$!; PIDS+=($S2)
  LD_LIBRARY_PATH="$WORK/other:${LD_LIBRARY_PATH:-}" "$BIN/lockstep-client" --connect "127.0.0.1:$((PORT + 5))" \
      --name other --bot 1 --sim-lib "$1" --hash-log "$WORK/other.log" >/dev/null 2>"$WORK/other.err"
}
refused_join "$CRATES"; rc=$?
[ $rc = 0 ] && fail "a player with another build of libbox2d was admitted"
grep -q "$SONAME is another build" "$WORK/other.err" || fail "the refusal does not name the library: $(tail -3 "$WORK/other.err")"
kill $S2 2>/dev/null; wait $S2 2>/dev/null
echo "ok: refused at join (exit $rc): $(grep -o "$SONAME is another build[^(]*" "$WORK/other.err" | head -1)"
# Opted out, Box2D is not in the fingerprint, but the machine code covers it: the other build is
# refused as other code, until a gate report lists both codes.
refused_join "$UNCOVERED"; rc=$?
[ $rc = 4 ] || fail "with Box2D opted out, another build should still be refused by its machine code (exit $rc)"
grep -q "the module's machine code differs: the joining peer's xxh3:" "$WORK/other.err" ||
  fail "the refusal should name the machine codes: $(tail -3 "$WORK/other.err")"
grep -q "libbox2d.* (opted out" "$WORK/other.err" || fail "the client does not say Box2D is opted out"
kill $S2 2>/dev/null; wait $S2 2>/dev/null
code_here=$(sed -n 's/.*machine code \(xxh3:[0-9a-f]*\): peers.*/\1/p' "$WORK/s2.err" | head -1)
code_other=$(sed -n 's/.*machine code \(xxh3:[0-9a-f]*\) (.*/\1/p' "$WORK/other.err" | head -1)
[ -n "$code_here" ] && [ -n "$code_other" ] && [ "$code_here" != "$code_other" ] || fail "two machine codes expected: '$code_here' '$code_other'"
echo "ok: with Box2D opted out (UNCOVERED) another build is refused by its machine code: $(grep -o "the module's machine code differs[^;]*" "$WORK/other.err" | head -1)"
printf '{"format": "lockstep-equal-builds/1", "builds": [{"leg": "here", "code": "%s"}, {"leg": "other", "code": "%s"}]}\n' \
  "$code_here" "$code_other" >"$WORK/equal.json"
refused_join "$UNCOVERED" --equal-builds "$WORK/equal.json" || fail "with the gate's report the player should play: $(tail -3 "$WORK/other.err")"
wait $S2 || fail "the server with Box2D opted out"
cmp -s "$WORK/s2.log" "$WORK/other.log" || fail "the opted-out session's hashes differ"
echo "ok: given a gate report listing both builds, the other build plays, hash-equal"

# Offline the same: a replay records the builds of the libraries its module linked, and a build
# with another libbox2d is refused (exit 2, the library named) unless told to go on.
"$BIN/lockstep-replay" --sim-lib "$CRATES" record-scenario "$WORK/crates.replay" --ticks 300 2>/dev/null || fail "record-scenario"
json_check <("$BIN/lockstep-replay" --sim-lib "$CRATES" info "$WORK/crates.replay" 2>/dev/null) \
  '[l["name"] for l in d["libraries"]] == ["'"$SONAME"'"] and len(d["settings_hex"]) == 32' "info lists the recorded libraries"
LD_LIBRARY_PATH="$WORK/other:${LD_LIBRARY_PATH:-}" "$BIN/lockstep-replay" --sim-lib "$CRATES" verify "$WORK/crates.replay" \
  >/dev/null 2>"$WORK/verify-other.err"; rc=$?
[ $rc = 2 ] && grep -q "refused: $SONAME is another build: this build's" "$WORK/verify-other.err" ||
  fail "verify with another libbox2d: exit $rc, $(cat "$WORK/verify-other.err")"
LD_LIBRARY_PATH="$WORK/other:${LD_LIBRARY_PATH:-}" "$BIN/lockstep-replay" --sim-lib "$CRATES" --any-build verify "$WORK/crates.replay" \
  >/dev/null 2>&1 || fail "verify --any-build with the same code in another build should pass"
echo "ok: a replay with another libbox2d build is refused by name, and replays with --any-build"

echo "PASS: Box2D under lockstep: the naive design named by the history check, the rebuilding one hash-equal with a late joiner through netsim, another libbox2d build refused at join by name"
