#!/usr/bin/env bash
# A join whose state does not match is a desync, reported like any other. The module leaves a
# value out of its serialization (walkers_broken2: the pulse): players who started at tick 0
# agree, but a late joiner's snapshot lacks the pulse, so its first hash differs. The server
# localizes it (entity and field), writes the report, closes that connection, plays on with the
# others and exits 3.
source "$(dirname "$0")/lib.sh" "$1"
LIB="$BIN/libwalkers_broken2.so"
"$BIN/lockstep-server" --sim-lib "$LIB" --port "$PORT" --players 2 --ticks 700 --allow-late-join \
    --desync-dir "$WORK" --hash-log "$WORK/server.log" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot host 1 --sim-lib "$LIB"; H=$BOT_PID
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$PORT" --name early --bot 2 --ticks 100 >/dev/null 2>"$WORK/early.err" &
E=$!; PIDS+=($E)
expect_exit $E 0 "early leaver"
for i in $(seq 200); do [ "$(wc -l <"$WORK/host.log" 2>/dev/null || echo 0)" -ge 200 ] && break; sleep 0.05; done
"$BIN/lockstep-client" --sim-lib "$LIB" --connect "127.0.0.1:$PORT" --name late --bot 3 --summary "$WORK/late.json" \
    >/dev/null 2>"$WORK/late.err" &
L=$!; PIDS+=($L)
wait $L
expect_exit $H 0 host
expect_exit $S 3 server
cmp "$WORK/server.log" "$WORK/host.log" || fail "the host's hash log differs: the others must play on"
json_check "$WORK/server.json" 'd["joins_running"] == 1 and d["join_mismatches"] == 1 and d["verified"] == 0 and len(d["desyncs"]) == 1 and d["desyncs"][0]["name"] == "late"' \
  "the mismatched join was not counted as a desync"
R=$(ls "$WORK"/desync-*.json 2>/dev/null | head -1)
[ -n "$R" ] || fail "no desync report: $(ls "$WORK")"
json_check "$R" 'd["name"] == "late" and d["where"] in ("entity", "global") and d["field"] is not None and "join snapshot" in d["note"]' \
  "the report does not localize the mismatch"
echo "PASS: the mismatched join reported at $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("tick", d["tick"], d["where"], d["entity"], d["field"])' "$R"), the session went on, exit 3"
