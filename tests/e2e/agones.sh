#!/usr/bin/env bash
# --agones against a fake Agones SDK sidecar on loopback: /ready once when the server listens,
# /health while it runs, /shutdown once when its session ends, in that order. Then a fleet's
# match: matchmaker.py mints a player's token with a fresh key; the server (--token-key agones)
# refuses it until the allocation's annotation hands it that key, then admits it.
source "$(dirname "$0")/lib.sh" "$1"
SDK=$((PORT + 1))
python3 - "$SDK" "$WORK/sdk.log" <<'PY' &
import http.server, sys, time
port, log = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0)); body = self.rfile.read(n)
        with open(log, "a") as f: f.write(f"{time.monotonic():.3f} {self.path} {body.decode()}\n")
        try:
            self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
        except OSError:
            pass  # the SDK client may close as soon as it has the status line
    def do_PUT(self):  # SetAnnotation: logged as "PUT/metadata/annotation BODY"
        n = int(self.headers.get("Content-Length", 0)); body = self.rfile.read(n)
        with open(log, "a") as f: f.write(f"{time.monotonic():.3f} PUT{self.path} {body.decode()}\n")
        try:
            self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
        except OSError:
            pass
    def do_GET(self):
        # The GameServer, with the annotations an allocation set (a file the test writes).
        ann = {}
        try:
            ann = {"lockstep.dev/token-key": open(log + ".key").read().strip()}
        except OSError:
            pass
        port = 0
        try:
            port = int(open(log + ".port").read())
        except (OSError, ValueError):
            pass
        # Other annotations a GameServer carries make the body longer than 2 KiB, which the real
        # SDK server sends chunked (HTTP/1.1 Transfer-Encoding: chunked), in pieces.
        ann["example.com/notes"] = "n" * 3000
        body = ('{"object_meta": {"name": "gs-1", "annotations": %s}, "status": {"state": "%s", "address": "127.0.0.1", '
                '"ports": [{"name": "game", "port": %d}]}}'
                % (__import__("json").dumps(ann), "Allocated" if len(ann) > 1 else "Ready", port)).encode()
        with open(log, "a") as f: f.write(f"{time.monotonic():.3f} GET{self.path} -\n")
        try:
            self.protocol_version = "HTTP/1.1"
            self.send_response(200); self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close"); self.end_headers()
            for i in range(0, len(body), 1000):
                piece = body[i:i + 1000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True
        except OSError:
            pass
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
F=$!; PIDS+=($F)
wait_tcp "$SDK" "the fake Agones SDK server"
AGONES_SDK_HTTP_PORT=$SDK "$BIN/lockstep-server" --port "$PORT" --players 1 --ticks 600 --agones >/dev/null 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
sleep 0.3
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name a --bot 1 >/dev/null 2>"$WORK/a.err" &
A=$!; PIDS+=($A)
expect_exit $A 0 client
expect_exit $S 0 server
cat "$WORK/sdk.log"
paths=$(awk '{print $2}' "$WORK/sdk.log" | tr '\n' ' ')
[ "$(awk '{print $2}' "$WORK/sdk.log" | head -1)" = /ready ] || fail "first call is not /ready: $paths"
[ "$(grep -c ' /ready ' "$WORK/sdk.log")" = 1 ] || fail "/ready not exactly once: $paths"
[ "$(grep -c ' /health ' "$WORK/sdk.log")" -ge 2 ] || fail "fewer than 2 health pings: $paths"
[ "$(awk '{print $2}' "$WORK/sdk.log" | tail -1)" = /shutdown ] || fail "last call is not /shutdown: $paths"
[ "$(grep -c ' /shutdown ' "$WORK/sdk.log")" = 1 ] || fail "/shutdown not exactly once: $paths"
grep -q ' {}$' "$WORK/sdk.log" || fail "bodies are not {}"
grep -q 'PUT/metadata/annotation {"key":"lockstep.dev/result"' "$WORK/sdk.log" || fail "the session's result was not annotated"
echo "ok: ready, $(grep -c ' /health ' "$WORK/sdk.log") health pings, shutdown"

# A match on the fleet: its own key and its node's port, through the allocation. A relay stands
# for the node's port mapping (portPolicy Dynamic): players reach NODE, the server listens on P2.
P2=$((PORT + 5)); NODE=$((PORT + 6))
echo "$NODE" >"$WORK/sdk.log.port"
"$BIN/lockstep-netsim" --listen $NODE --forward "127.0.0.1:$P2" >/dev/null 2>"$WORK/node.err" &
N=$!; PIDS+=($N)
AGONES_SDK_HTTP_PORT=$SDK "$BIN/lockstep-server" --port $P2 --players 1 --ticks 300 --agones --token-key agones \
    --summary "$WORK/match.json" >/dev/null 2>"$WORK/match-server.err" &
S=$!; PIDS+=($S)
python3 "$(dirname "$0")/../../docker/agones/matchmaker.py" --players alice --address "127.0.0.1:$NODE" \
    --token-bin "$BIN/lockstep-token" >"$WORK/match-tokens.json" || fail "matchmaker.py"
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"]["alice"])' "$WORK/match-tokens.json" >"$WORK/alice.token"
# The player goes at once, before the allocation's key has reached the server: its request waits.
"$BIN/lockstep-client" --connect-token "$WORK/alice.token" --name alice --bot 1 >/dev/null 2>"$WORK/alice.err" &
A=$!; PIDS+=($A)
sleep 1
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key_annotation"]["lockstep.dev/token-key"])' \
    "$WORK/match-tokens.json" >"$WORK/sdk.log.key"
expect_exit $A 0 "alice, sent before the key reached the server"
expect_exit $S 0 "the match's server"
kill -INT $N; wait $N
grep -q "token key arrived with the allocation; players may join at 127.0.0.1:$NODE" "$WORK/match-server.err" \
    || fail "the server did not take the allocation's key and address"
json_check "$WORK/match.json" 'd["sealed"] and d["ticks"] == 300 and d["refusals"] == {}' "a sealed match of 300 ticks, no refusal"
# The match's result, annotated on the GameServer, is authentic under the match's token key.
grep 'PUT/metadata/annotation' "$WORK/sdk.log" | tail -1 | cut -d' ' -f3- |
  python3 -c 'import json,sys; print(json.loads(json.load(sys.stdin)["value"])["format"])' | grep -qx "lockstep-result/4" ||
  fail "the match's result annotation is not a result"
grep 'PUT/metadata/annotation' "$WORK/sdk.log" | tail -1 | cut -d' ' -f3- |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["value"])' >"$WORK/match-result.json"
(umask 077; cp "$WORK/sdk.log.key" "$WORK/match.key")
"$BIN/lockstep-token" verify-result --key "$WORK/match.key" "$WORK/match-result.json" >/dev/null 2>"$WORK/verify.err" ||
  fail "the annotated result is not authentic under the match's key: $(cat "$WORK/verify.err")"
echo "PASS: ready, health pings and shutdown; the match's key and address came with the allocation and admitted its player; its result annotated, authentic under the match's key"
