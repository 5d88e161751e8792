#!/usr/bin/env bash
# lockstep-server in a fleet: its ops port (/metrics, /healthz, /readyz), JSON logs keyed by
# session, and the graceful drain. A match of two bots is scraped while it runs; SIGTERM mid-match
# makes the server refuse a newcomer as Draining while the match plays to its last tick, and the
# result reaches the webhook complete, exit 0. Then the drain's grace running out, and a second
# SIGTERM, each stop the match with its result marked incomplete; SIGTERM in the lobby stops at once.
source "$(dirname "$0")/lib.sh" "$1"
OPS=$((PORT + 1)); HOOK=$((PORT + 2))
# http_get PATH [METHOD]: prints the status code, then the body, of a request to the ops port.
http_get() {
  python3 - "$OPS" "$1" "${2:-GET}" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
c.request(sys.argv[3], sys.argv[2], body=b"x" if sys.argv[3] != "GET" else None)
r = c.getresponse()
print(r.status); sys.stdout.write(r.read().decode())
PY
}
# wait_for PATH PATTERN: polls the ops port until the answer matches (10 s).
wait_for() {
  for _ in $(seq 100); do http_get "$1" 2>/dev/null | grep -qE "$2" && return 0; sleep 0.1; done
  fail "$1 never matched '$2': $(http_get "$1" 2>&1 | head -5)"
}
python3 - "$HOOK" "$WORK/posted.json" <<'PY' &
import http.server, sys
port, out = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        open(out, "wb").write(body)
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
PIDS+=($!)

# 1. A match scraped while it runs, then drained by SIGTERM: it plays to its last tick.
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 2000 --metrics-port "$OPS" --metrics-bind 127.0.0.1 \
    --log-format json --session-id match-1 --result-webhook "http://127.0.0.1:$HOOK/result" \
    --summary "$WORK/drained.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
wait_for /healthz '^200'
wait_for /readyz '^200'
start_bot a 1; A=$BOT_PID
start_bot b 2; B=$BOT_PID
wait_for /metrics '^lockstep_tick (2[0-9][0-9]|[3-9][0-9][0-9])$'
http_get /metrics >"$WORK/metrics.txt"
for want in 'lockstep_info{session="match-1"' 'lockstep_players 2' 'lockstep_seat_round_trip_seconds{slot="0"}' \
            'lockstep_seat_loss_ratio{slot="1"}' 'lockstep_tick_lateness_seconds_bucket{le="0.001"}' \
            'lockstep_joins_total{kind="join"} 2' 'lockstep_datagrams_total{direction="in"}' \
            'lockstep_sessions{phase="running"} 1' 'lockstep_draining 0'; do
  grep -qF "$want" "$WORK/metrics.txt" || fail "/metrics lacks $want"
done
grep -qE '^lockstep_ticks_executed_total [1-9]' "$WORK/metrics.txt" || fail "/metrics counts no tick"
[ "$(http_get /readyz | head -1)" = 503 ] || fail "/readyz is ready while a match without late joins runs"
# SIGTERM at once, while most of the match is still to play (each request here starts a Python,
# which on a busy machine takes seconds): the drain is seen before the match ends, then the
# other requests are answered during it.
kill -TERM $S
wait_for /readyz 'shutting down'
wait_for /metrics '^lockstep_draining 1$'
[ "$(http_get /metrics POST | head -1)" = 405 ] || fail "POST /metrics was not refused with 405"
[ "$(http_get /favicon.ico | head -1)" = 404 ] || fail "an unknown path was not 404"
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name late --bot 3 >"$WORK/late.json" 2>"$WORK/late.err" &
L=$!; PIDS+=($L)
expect_exit $L 4 "a newcomer during the drain"
grep -q "refused by the server (Draining)" "$WORK/late.err" || fail "the newcomer was not refused as Draining"
expect_exit $A 0 "bot a"
expect_exit $B 0 "bot b"
expect_exit $S 0 "the draining server"
json_check "$WORK/posted.json" 'd["format"] == "lockstep-result/4" and d["ticks"] == 2000 and not d["incomplete"]' \
    "the drained match's result reached the webhook, complete"
json_check "$WORK/drained.json" 'd["session_id"] == "match-1" and d["drained"]["stopped"] is False and d["ticks"] == 2000 and d["socket_batching"] is True' \
    "the summary names the session and a drain that let the match finish"
# Every line of the log is one JSON object naming the session; seats and ticks where there are.
python3 - "$WORK/server.err" <<'PY' || fail "the JSON log is not what a fleet's shipper reads"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines, "no log"
docs = [json.loads(l) for l in lines]
for d in docs:
    assert set(d) == {"time", "level", "program", "session", "tick", "slot", "event", "message"}, d
    assert d["session"] == "match-1" and d["program"] == "lockstep-server", d
assert any(d["slot"] == 0 and d["event"] == "admission" and "joined" in d["message"] for d in docs), "no join of seat 0"
assert any(d["message"].startswith("SIGTERM: draining") and d["tick"] > 0 for d in docs), "no drain line with its tick"
assert any("Draining" in d["message"] or "refus" in d["message"] for d in docs), "no refusal line"
PY

# long_match NAME [OPTION...]: a server for 10 minutes of play (result in $WORK/NAME.json, log in
# $WORK/NAME.err) and two bots, past tick 100; S, A and B are their pids.
long_match() {
  local name=$1; shift
  "$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 60000 --metrics-port "$OPS" --result "$WORK/$name.json" "$@" \
      >/dev/null 2>"$WORK/$name.err" &
  S=$!; PIDS+=($S)
  wait_for /readyz '^200'
  start_bot a 1; A=$BOT_PID
  start_bot b 2; B=$BOT_PID
  wait_for /metrics '^lockstep_tick [1-9][0-9][0-9]$'
}

# 2. The grace runs out: the match stops, its result marked incomplete; exit 0.
long_match graced --drain-grace 1
kill -TERM $S
expect_exit $S 0 "the server whose drain's grace ran out"
wait $A $B
grep -q "the drain's grace is over: stopping the match" "$WORK/graced.err" || fail "the grace's end was not logged"
json_check "$WORK/graced.json" 'd["incomplete"] and 100 <= d["ticks"] < 6000' "a result marked incomplete, stopped about 1 s in"

# 3. A second SIGTERM stops at once, the result marked incomplete.
long_match twice
kill -TERM $S
wait_for /readyz 'shutting down'
kill -TERM $S
expect_exit $S 0 "the server told twice"
wait $A $B
grep -q "a second SIGTERM: stopping the match" "$WORK/twice.err" || fail "the second SIGTERM was not logged"
json_check "$WORK/twice.json" 'd["incomplete"] and d["ticks"] < 60000' "a result marked incomplete"

# 4. SIGTERM in the lobby: nothing to finish, the server stops at once.
"$BIN/lockstep-server" --port "$PORT" --players 2 --metrics-port "$OPS" >/dev/null 2>"$WORK/lobby.err" &
S=$!; PIDS+=($S)
wait_for /readyz '^200'
kill -TERM $S
expect_exit $S 0 "the server in its lobby"
grep -q "SIGTERM before the match started: stopping" "$WORK/lobby.err" || fail "the lobby's stop was not logged"
grep -q "socket batching: on" "$WORK/lobby.err" || fail "the server did not say whether its socket is read in batches"
echo "PASS: scraped while it ran; SIGTERM drained it to its last tick with a complete result at the webhook; the grace's end and a second SIGTERM stop it incomplete; JSON logs keyed by session"
