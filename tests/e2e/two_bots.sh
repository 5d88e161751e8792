#!/usr/bin/env bash
# lockstep-server --players 2 --ticks 500 with two --bot clients: all exit 0, hash logs identical.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 500 --hash-log "$WORK/server.log" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot alice 1; A=$BOT_PID
start_bot bob 2; B=$BOT_PID
# Mid-session, --status answers with each player's network figures.
sleep 2.5
"$BIN/lockstep-server" --status "127.0.0.1:$PORT" >"$WORK/status.json" || fail "--status did not answer"
python3 - "$WORK/status.json" <<'PY' || fail "status: $(cat "$WORK/status.json")"
import json, sys
st = json.load(open(sys.argv[1]))
assert st["phase"] == "running" and st["tick"] > 100, st
names = sorted(s["name"] for s in st["seats"])
assert names == ["alice", "bob"], names
# A late input or two is a busy machine's (the suite runs beside other tests); a broken input
# path is late far more often than one tick in twenty.
for s in st["seats"]:
    assert s["latency_us"]["p50"] > 0 and s["lead_ms"] > 0, s
    assert set(s["fills"]) == {"late", "lost", "silent"} and s["fills"]["late"] <= st["tick"] // 20, s
PY
expect_exit $A 0 alice
expect_exit $B 0 bob
expect_exit $S 0 server
[ "$(wc -l <"$WORK/server.log")" = 500 ] || fail "server hash log has $(wc -l <"$WORK/server.log") lines, expected 500"
cmp "$WORK/server.log" "$WORK/alice.log" || fail "alice's hash log differs from the server's"
cmp "$WORK/server.log" "$WORK/bob.log" || fail "bob's hash log differs from the server's"
grep -Eq '^500 [0-9a-f]{16}$' "$WORK/server.log" || fail "hash log format"
echo "PASS: 500 ticks, three identical hash logs"
