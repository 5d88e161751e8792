#!/usr/bin/env bash
# The WebSocket door under hostile peers (websocket_abuse.py) while two native bots play 2000
# ticks through ENet: text frames, oversized messages whole and in fragments, a flood, an upgrade
# without the protocol, pings without a join, slow-loris handshakes, too many connections from
# one address, and on the datagram path (--webrtc) a bad offer, too many offers and junk at a
# channel's port, are each refused with a reason (a close code) and counted, and the native
# players' session is untouched. Then the door over TLS: wss:// and https:// with a certificate from options.
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK/web" && echo '<!doctype html><title>door</title>' >"$WORK/web/index.html"
# All addresses: the per-address bound is checked from this machine's own address (loopback is exempt).
OTHER=$(hostname -I 2>/dev/null | awk '{print $1}')
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 2000 --websocket-port $((PORT + 1)) --webrtc \
    --web-root "$WORK/web" --join-timeout 3 --hash-log "$WORK/server.log" --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
wait_tcp $((PORT + 1)) "the WebSocket door"
start_bot a 1 --summary "$WORK/a.json"; A=$BOT_PID
start_bot b 2 --summary "$WORK/b.json"; B=$BOT_PID
/usr/bin/python3 "$HERE/websocket_abuse.py" 127.0.0.1 $((PORT + 1)) "$WORK/abuse.json" $OTHER >"$WORK/abuse.out" 2>"$WORK/abuse.err" \
  || { cat "$WORK/abuse.err"; fail "websocket_abuse.py failed"; }
expect_exit $A 0 "bot a"
expect_exit $B 0 "bot b"
expect_exit $S 0 server
cmp -s "$WORK/server.log" "$WORK/a.log" && cmp -s "$WORK/server.log" "$WORK/b.log" || fail "a native player's hashes differ"
[ "$(wc -l <"$WORK/server.log")" = 2000 ] || fail "the session did not reach tick 2000"
# Held back by the hostile peers, a player's inputs would be filled by the hundred; a few fills are
# a starved bot's own lateness on a machine busy beside the suite (4 of 2000 with two CPU hogs and
# a build beside it, tools/under-load.sh), the bound the browser test allows too.
for n in a b; do json_check "$WORK/$n.json" 'd["inputs_filled"] <= 15' "$n was held back by the hostile peers"; done
echo "ok: the native players' 2000 ticks were untouched"
X=$WORK/abuse.json
if [ -n "$OTHER" ]; then
  json_check "$X" 'd["per_address_open"] == 8' "the door kept 8 connections from one address ($OTHER) open"
else
  echo "note: no address besides loopback here: the per-address bound is not checked"
fi
json_check "$X" 'd["loopback_open"] == 10' "loopback is exempt from the per-address bound"
json_check "$X" 'd["text"]["code"] == 1003' "a text message was refused with 1003"
json_check "$X" 'd["oversized"]["code"] == 1009' "an oversized message was refused with 1009"
json_check "$X" 'd["oversized_in_fragments"]["code"] == 1009' "an oversized message in fragments was refused with 1009"
# A flood of junk is cut by whichever bound it meets first: the session's (ten malformed messages
# from a peer that has not joined) or the door's message rate.
json_check "$X" 'd["flood"]["reason"] != "not closed"' "a flood was cut"
json_check "$X" 'd["no_subprotocol"]["code"] is None' "an upgrade without the lockstep protocol was refused"
json_check "$X" 'd["other_subprotocols"]["code"] is None and d["other_subprotocols"]["reason"] != "not closed"' "an upgrade naming other protocols only was refused"
json_check "$X" '2 <= d["pings_without_end"]["seconds"] <= 8' "a peer that only pinged was closed at the join timeout"
json_check "$X" 'd["fragmented_small"]["reason"] != "not closed" and d["fragmented_small"]["seconds"] <= 1.5' "a peer not joined that sent a malformed message was not closed at once"
json_check "$X" 'all(t is not None and t <= 9 for t in d["slow_loris_seconds"])' "slow-loris handshakes were cut within the handshake time"
json_check "$WORK/server.json" 'd["websocket"]["refused"]["text"] >= 1 and d["websocket"]["refused"]["oversized"] >= 2 and d["websocket"]["refused"]["protocol"] >= 2 and d["websocket"]["refused"]["address"] >= (4 if "'"$OTHER"'" else 0) and d["websocket"]["refused"]["before_request"] >= 3' "the door counted every refusal"
json_check "$WORK/server.json" 'd["drops"].get("malformed", 0) >= 1' "the session dropped the small fragmented message as malformed"
# The datagram path: signalling that is no offer is refused with why (the connection kept), a 9th
# offer on one connection closes it, and junk at a channel's port instead of ICE changes nothing.
json_check "$X" 'd["bad_offer"]["kind"] == "n" and "no data channel" in d["bad_offer"]["reason"]' "a bad offer was refused with its reason"
json_check "$X" 'd["offers_flood"]["code"] == 1008 and "offers" in d["offers_flood"]["reason"] and d.get("offers_answered", 0) <= 8' "a connection's 9th offer closed it"
json_check "$X" 'd["udp_garbage"]["candidates"] >= 1 and d["udp_garbage"]["sent"] >= 200' "junk was sent at a channel's port"
json_check "$WORK/server.json" 'd["websocket"]["datagrams"]["offers"] >= 10 and d["websocket"]["datagrams"]["channels"] == 0 and d["websocket"]["datagrams"]["failed"] >= 1 and d["websocket"]["datagrams"]["messages_in"] == 0' "the datagram path counted the offers and opened nothing: $(json_get "$WORK/server.json" 'd["websocket"]["datagrams"]')"
echo "ok: every hostile peer was refused with its reason and counted"

# The door over TLS: a self-signed certificate; wss:// takes the protocol, https:// serves the page.
# A link in the web root to a file outside it is not followed (counted); one to a file inside is.
echo 'secret outside the web root' >"$WORK/secret.txt"
ln -s "$WORK/secret.txt" "$WORK/web/leak.txt"
ln -s index.html "$WORK/web/inside.html"
# The page's files beside their gzip, as web/CMakeLists.txt writes them; a .gz link out of the web
# root is not followed either (the plain file goes instead).
gzip -9 -n -k "$WORK/web/index.html"
# A file under h/, where the web build puts the page's files named by their content's hash.
mkdir -p "$WORK/web/h" && echo 'hashed' >"$WORK/web/h/page.0123456789abcdef.js"
echo 'secret gzip outside the web root' | gzip -n >"$WORK/secret.html.gz"
ln -s "$WORK/secret.html.gz" "$WORK/web/inside.html.gz"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
    >/dev/null 2>&1 || fail "openssl could not make a certificate"
"$BIN/lockstep-server" --port $((PORT + 2)) --bind 127.0.0.1 --players 1 --websocket-port $((PORT + 3)) \
    --web-root "$WORK/web" --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" --summary "$WORK/tls.json" 2>"$WORK/tls.err" &
T=$!; PIDS+=($T)
wait_tcp $((PORT + 3)) "the TLS door"
/usr/bin/python3 - $((PORT + 3)) "$WORK/web/index.html" <<'PY' || fail "the TLS door did not serve wss:// and https:// (and the page's gzip)"
import asyncio, ssl, sys, urllib.request
import websockets
port = int(sys.argv[1])
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
page = urllib.request.urlopen(f"https://127.0.0.1:{port}/", context=ctx).read()
assert b"door" in page, page
assert b"door" in urllib.request.urlopen(f"https://127.0.0.1:{port}/inside.html", context=ctx).read()
try:
    leaked = urllib.request.urlopen(f"https://127.0.0.1:{port}/leak.txt", context=ctx).read()
except Exception:
    leaked = b""
assert b"secret" not in leaked, "a link out of the web root was followed"
# A browser that takes gzip gets index.html.gz as the page, Content-Encoding: gzip; one that does
# not, the file itself; a second load with the ETag is a 304 without the body.
import gzip, urllib.error
def get(path, **headers):
    r = urllib.request.urlopen(urllib.request.Request(f"https://127.0.0.1:{port}{path}", headers=headers), context=ctx)
    return r.headers, r.read()
plain = open(sys.argv[2], "rb").read()
h, body = get("/", **{"Accept-Encoding": "gzip, deflate"})
assert h["Content-Encoding"] == "gzip" and gzip.decompress(body) == plain, (dict(h), body[:40])
assert "must-revalidate" in h["Cache-Control"] and h["ETag"], dict(h)
h2, body2 = get("/")
assert h2["Content-Encoding"] is None and body2 == plain, dict(h2)
try:
    get("/", **{"Accept-Encoding": "gzip", "If-None-Match": h["ETag"]})
    raise SystemExit("a second load with the ETag was not a 304")
except urllib.error.HTTPError as e:
    assert e.code == 304, e.code
# A file named by its hash is kept a year unasked; the page that names it is revalidated.
h4, body4 = get("/h/page.0123456789abcdef.js")
assert body4 == b"hashed\n" and "max-age=31536000" in h4["Cache-Control"] and "must-revalidate" not in h4["Cache-Control"], dict(h4)
h3, body3 = get("/inside.html", **{"Accept-Encoding": "gzip"})
assert b"secret" not in body3 and h3["Content-Encoding"] is None and body3 == plain, (dict(h3), body3[:40])
print("ok: the page in gzip to a browser that takes it, plain otherwise, 304 with its ETag; no .gz link out of the root")

async def main():
    async with websockets.connect(f"wss://127.0.0.1:{port}/", subprotocols=["lockstep"], ssl=ctx) as ws:
        assert ws.subprotocol == "lockstep"
    try:
        async with websockets.connect(f"ws://127.0.0.1:{port}/", subprotocols=["lockstep"], open_timeout=3):
            raise SystemExit("plain ws:// was taken on the TLS port")
    except (websockets.InvalidHandshake, websockets.InvalidMessage, OSError, asyncio.TimeoutError, EOFError):
        pass
asyncio.run(main())
print("ok: wss:// and https:// on the TLS port, plain ws:// refused there")
PY
kill -INT $T; wait $T
json_check "$WORK/tls.json" 'd["websocket"]["refused"]["outside_root"] >= 1' "the request for a file outside the web root was not counted"
# Connect tokens through plain ws:// off loopback are refused at start: a token could be read on the way.
"$BIN/lockstep-token" keygen --out "$WORK/token.key" >/dev/null || fail "lockstep-token keygen"
"$BIN/lockstep-server" --port $((PORT + 4)) --players 1 --websocket-port $((PORT + 5)) --token-key "$WORK/token.key" \
        >/dev/null 2>"$WORK/plain.err" &
P=$!; PIDS+=($P)
expect_exit $P 2 "a server with tokens and a plain door on all addresses"
grep -q "need TLS" "$WORK/plain.err" || fail "the refusal does not say why: $(cat "$WORK/plain.err")"
echo "PASS"
