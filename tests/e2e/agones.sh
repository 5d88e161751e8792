#!/usr/bin/env bash
# --agones against a fake Agones SDK sidecar on loopback: /ready once when the server listens,
# /health while it runs, /shutdown once when its session ends, in that order.
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
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
F=$!; PIDS+=($F)
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$SDK) 2>/dev/null && break; sleep 0.1; done
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
echo "PASS: ready, $(grep -c ' /health ' "$WORK/sdk.log") health pings, shutdown"
