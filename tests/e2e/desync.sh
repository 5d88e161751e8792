#!/usr/bin/env bash
# One client perturbs its state by one ULP after tick 250; the server (--on-desync stop) must
# catch it at tick 250, name that player, exit 3, and not blame the honest client.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 1000 --on-desync stop --desync-dir "$WORK" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot honest 1 --summary "$WORK/honest.json"; H=$BOT_PID
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name cheat --bot 2 --inject-desync-at 250 --summary "$WORK/cheat.json" --desync-dir "$WORK" \
    >/dev/null 2>"$WORK/cheat.err" &
C=$!; PIDS+=($C)
expect_exit $S 3 server
wait $H; wait $C
json_check "$WORK/server.json" 'len(d["desyncs"]) == 1 and d["desyncs"][0]["tick"] == 250 and d["desyncs"][0]["name"] == "cheat"' "summary does not name tick 250 and cheat"
python3 -c 'import json,sys; sys.exit(any(d["name"] == "honest" for d in json.load(open(sys.argv[1]))["desyncs"]))' \
    "$WORK/server.json" || fail "the honest client was blamed"
json_check "$WORK/cheat.json" 'd["desynced"] and d["exit"] == 3' "the cheating client was not told it diverged"
json_check "$WORK/honest.json" 'not d["desynced"]' "the honest client was told it diverged"
# The report localizes it: the default perturbation (selector 12345) names float 12345 mod 264
# = 201 of 4 x 66: field 201 / 66 = 3 (vy) of entity
# 201 mod 66 = 3; both values are exact.
R="$(ls "$WORK"/desync-250-*.json 2>/dev/null | head -1)"
[ -n "$R" ] || fail "no desync-250-<player>.json report"
json_check "$R" 'd["tick"] == 250 and d["where"] == "entity" and d["entity"] == 3' "report names the wrong entity"
json_check "$R" 'd["field"] == "vy"' "report names the wrong field"
json_check "$R" '"0x" in d["server_value"]["hex"] and "0x" in d["client_value"]["hex"] and d["server_value"]["bits"] != d["client_value"]["bits"]' "report lacks exact values"
# The desync bundle beside it: the server's states and the inputs up to the tick, every voter's
# hash; the bundle seeks to the tick, and its page, opened in Chromium, names what the report names.
json_check "$R" 'd["bundle"] is not None and d["bundle"].endswith(".bundle")' "the report names no bundle"
BUNDLE=$(json_get "$R" 'd["bundle"]')
[ -f "$BUNDLE" ] || fail "no bundle at $BUNDLE"
"$BIN/lockstep-replay" seek "$BUNDLE" 250 >"$WORK/seek.json" 2>"$WORK/seek.err" || fail "seek in the bundle failed"
json_check "$WORK/seek.json" "d['hash'] == '$(json_get "$R" 'd["server_hash"]')' and d['keyframe'] < 250" "the bundle's state at 250 is not the server's"
"$BIN/lockstep-replay" view "$BUNDLE" -o "$WORK/desync.html" >/dev/null 2>"$WORK/view.err" || fail "view failed"
view_page "$WORK/desync.html" desync
grep -q 'data-tick="250" data-entity="3" data-field="vy"' "$WORK/desync.dom" \
  || fail "the page does not name tick 250, entity 3, field vy: $(grep -o 'id="headline"[^>]*>[^<]*' "$WORK/desync.dom")"
grep -q 'cheat' "$WORK/desync.dom" || fail "the page does not name the player"
# The client told it diverged wrote its own bundle: its states at the tick and before it; its page
# shows its state and the server's hash of the tick against its own. Stepping its frames from its
# first state reproduces its tick 249, but not its 250: the test hook changed that state after the
# step, which is what seek reports (exit 3), computing the honest state instead.
CB=$(ls "$WORK"/desync-250-*.client.bundle 2>/dev/null | head -1)
[ -n "$CB" ] && [ -f "$CB" ] || fail "the client told it diverged wrote no bundle"
grep -q "desync bundle of this client's states: $CB" "$WORK/cheat.err" || fail "the client does not name its bundle"
"$BIN/lockstep-replay" seek "$CB" 249 >/dev/null 2>"$WORK/cseek.err" || fail "seek to 249 in the client's bundle failed"
"$BIN/lockstep-replay" seek "$CB" 250 >"$WORK/cseek.json" 2>"$WORK/cseek.err"
[ $? = 3 ] || fail "seek to 250 in the client's bundle did not find its state unreproducible from its inputs"
json_check "$WORK/cseek.json" "d['hash'] == '$(json_get "$R" 'd["server_hash"]')'" "the client's frames do not step to the honest state"
"$BIN/lockstep-replay" view "$CB" -o "$WORK/client.html" >/dev/null 2>"$WORK/cview.err" || fail "view of the client's bundle failed"
view_page "$WORK/client.html" client
echo "PASS: desync caught at tick 250, only 'cheat' named, localized to entity 3 field vy; its bundle and page show it"
