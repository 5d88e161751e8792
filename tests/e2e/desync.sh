#!/usr/bin/env bash
# One client perturbs its state by one ULP after tick 250; the server (--on-desync stop) must
# catch it at tick 250, name that player, exit 3, and not blame the honest client.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 1000 --on-desync stop --desync-dir "$WORK" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot honest 1; H=$BOT_PID
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name cheat --bot 2 --inject-desync-at 250 >/dev/null 2>"$WORK/cheat.err" &
C=$!; PIDS+=($C)
expect_exit $S 3 server
wait $H; wait $C
grep -q 'DESYNC at tick 250: player [01] (cheat)' "$WORK/server.err" || fail "the server did not report tick 250 for cheat"
[ "$(grep -c 'DESYNC' "$WORK/server.err")" = 1 ] || fail "expected exactly one desync report"
grep -q '"desyncs":\[{"tick":250,' "$WORK/server.json" || fail "summary does not name tick 250"
python3 -c 'import json,sys; sys.exit(any(d["name"] == "honest" for d in json.load(open(sys.argv[1]))["desyncs"]))' \
    "$WORK/server.json" || fail "the honest client was blamed"
grep -q 'this client diverged at tick 250' "$WORK/cheat.err" || fail "the cheating client was not told"
grep -q 'this client diverged' "$WORK/honest.err" && fail "the honest client was told it diverged"
# The report localizes it: the default perturbation (selector 12345) names float 12345 mod 264
# = 201 of 4 x 66: field 201 / 66 = 3 (vy) of entity
# 201 mod 66 = 3; both values are exact.
R="$(ls "$WORK"/desync-250-*.json 2>/dev/null | head -1)"
[ -n "$R" ] || fail "no desync-250-<player>.json report"
grep -q '"entity": 3,' "$R" || fail "report names the wrong entity: $(cat "$R")"
grep -q '"field": "vy",' "$R" || fail "report names the wrong field: $(cat "$R")"
grep -q '"server_value": {"hex":"-\?0x' "$R" && grep -q '"client_value": {"hex":"-\?0x' "$R" || fail "report lacks exact values"
echo "PASS: desync caught at tick 250, only 'cheat' named, localized to entity 3 field vy"
