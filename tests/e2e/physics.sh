#!/usr/bin/env bash
# A physics engine under lockstep (examples/crates, on Debian's Box2D):
# - the naive design (one b2World kept for the session, loaded by rebuilding it) passes the clone
#   and round-trip checks but fails synctest's history and rollback checks, each naming the tick,
#   the entity and the field at defaults;
# - the design that rebuilds the world from its bytes every tick plays a session through
#   lockstep-netsim (80 ms one way, 3 % loss) with a late joiner loaded from a snapshot, all
#   hash-equal to the end.
# Usage: physics.sh BIN_DIR LIBCRATES LIBCRATES_NAIVE
source "$(dirname "$0")/lib.sh" "$1"
CRATES=$2 NAIVE=$3
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
echo "PASS: Box2D under lockstep: the naive design named by the history check, the rebuilding one hash-equal with a late joiner through netsim"
