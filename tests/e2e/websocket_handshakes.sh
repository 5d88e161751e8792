#!/usr/bin/env bash
# The WebSocket door under a crowd of slow handshakes (websocket_handshakes.py): 1000 connections
# that each send an unfinished upgrade request a byte at a time (reopened when closed) while two
# native bots play, then 1500 stalled TLS ClientHellos against a wss:// door (more than its budget
# of 1024: the oldest give way). Good upgrades among them get in every time (figures printed: the
# seconds each took). Behind a trusted proxy on loopback, the per-address bound holds each browser
# by its X-Forwarded-For address.
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
WS=$((PORT + 1))
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 1500 --websocket-port "$WS" --hash-log "$WORK/server.log" \
    --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
sleep 0.3
start_bot a 1 --summary "$WORK/a.json"; A=$BOT_PID
start_bot b 2 --summary "$WORK/b.json"; B=$BOT_PID
/usr/bin/python3 "$HERE/websocket_handshakes.py" 127.0.0.1 "$WS" "$WORK/plain.json" --count 1000 >"$WORK/plain.out" 2>"$WORK/plain.err" \
  || fail "websocket_handshakes.py failed"
cat "$WORK/plain.out"
expect_exit $A 0 "bot a"
expect_exit $B 0 "bot b"
expect_exit $S 0 server
cmp -s "$WORK/server.log" "$WORK/a.log" && cmp -s "$WORK/server.log" "$WORK/b.log" || fail "a native player's hashes differ"
json_check "$WORK/plain.json" 'd["open_at_first_good"] >= 900' "the attack did not hold its connections open"
json_check "$WORK/plain.json" 'all(t is not None for t in d["good_seconds"])' "a good upgrade was kept out by slow handshakes"
json_check "$WORK/server.json" 'd["websocket"]["handshakes"]["peak"] >= 900 and d["websocket"]["handshakes"]["timed_out"] >= 900' \
  "the door did not count the slow handshakes it held and cut"
expect_window_log "$WORK/server.err" "connections refused or cut" "127\\.0\\."
echo "ok: good upgrades got in beside 1000 slow handshakes: $(json_get "$WORK/plain.json" 'd["good_seconds"]') s"

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
    >/dev/null 2>&1 || fail "openssl could not make a certificate"
"$BIN/lockstep-server" --port $((PORT + 2)) --bind 127.0.0.1 --players 1 --websocket-port $((PORT + 3)) \
    --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" --summary "$WORK/tls.json" 2>"$WORK/tls.err" &
T=$!; PIDS+=($T)
sleep 0.5
/usr/bin/python3 "$HERE/websocket_handshakes.py" 127.0.0.1 $((PORT + 3)) "$WORK/tls-attack.json" --tls --count 1500 \
    >"$WORK/tls-attack.out" 2>"$WORK/tls-attack.err" || fail "websocket_handshakes.py --tls failed"
cat "$WORK/tls-attack.out"
# A browser offered HTTP/2 carries its WebSocket in a stream of a shared connection, which the
# door's per-connection handshake deadline would close 5 s in: the door answers HTTP/1.1 alone.
ALPN=$(/usr/bin/python3 - $((PORT + 3)) <<'PY'
import socket, ssl, sys
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
ctx.set_alpn_protocols(["h2", "http/1.1"])
with ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)) as s:
    print(s.selected_alpn_protocol())
PY
)
[ "$ALPN" = "http/1.1" ] || fail "the wss:// door chose '$ALPN' for a client offering h2 and http/1.1, not http/1.1"
kill -INT $T; wait $T
json_check "$WORK/tls-attack.json" 'all(t is not None for t in d["good_seconds"])' "a good wss:// upgrade was kept out by stalled ClientHellos"
json_check "$WORK/tls.json" 'd["websocket"]["handshakes"]["evicted"] >= 500 and d["websocket"]["handshakes"]["peak"] <= 1024' \
  "the door did not hold its handshake budget by closing the oldest"
echo "ok: good wss:// upgrades got in beside 1500 stalled ClientHellos: $(json_get "$WORK/tls-attack.json" 'd["good_seconds"]') s"

# Behind a trusted proxy every connection comes from loopback; X-Forwarded-For's last address
# is the browser's, held to 8 open connections at once like any other (page requests kept alive
# here: the session itself lets 4 connections of one address wait to join).
mkdir -p "$WORK/web" && echo '<!doctype html><title>door</title>' >"$WORK/web/index.html"
"$BIN/lockstep-server" --port $((PORT + 4)) --bind 127.0.0.1 --players 1 --websocket-port $((PORT + 5)) \
    --web-root "$WORK/web" --trusted-proxy 127.0.0.1 --summary "$WORK/proxy.json" 2>"$WORK/proxy.err" &
P=$!; PIDS+=($P)
sleep 0.3
/usr/bin/python3 - $((PORT + 5)) >"$WORK/proxy.out" 2>&1 <<'PY' || { cat "$WORK/proxy.out"; fail "the per-address bound behind a trusted proxy"; }
import http.client, sys
port = int(sys.argv[1])

def page(forwarded):
    """A page request kept alive; the connection, or None when the door refused it."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", "/", headers={"X-Forwarded-For": forwarded})
        r = c.getresponse()
        body = r.read()
        return c if r.status == 200 and b"door" in body else None
    except (OSError, http.client.HTTPException):
        return None

held = [page("203.0.113.9, 198.51.100.7") for _ in range(8)]
assert all(held), "eight connections of one browser were not all taken"
assert page("198.51.100.7") is None, "a ninth connection of one browser was taken"
other = page("198.51.100.8")
assert other is not None, "another browser behind the proxy was refused"
print("ok: 8 of one browser taken, the 9th refused, another browser taken")
PY
cat "$WORK/proxy.out"
kill -INT $P; wait $P
json_check "$WORK/proxy.json" 'd["websocket"]["refused"]["address"] == 1' "the refusal behind the proxy was not counted"
echo "PASS"
