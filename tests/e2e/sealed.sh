#!/usr/bin/env bash
# Sealed play through an attacker on the path. A server that takes only connect tokens hosts
# three bots, each through its own lockstep-netsim at 40 +- 5 ms with 2 % loss, which also flips
# a bit in 3 % of the play messages and in 70 % of the datagrams that carry a control message,
# replays an earlier play message after 3 % and injects random bytes after 3 % (with a keyless
# datagram check that would pass on a connection without keys), both ways, and captures
# everything it relays. Every altered, replayed or injected datagram fails the datagram check
# (PROTOCOL.md §1.1) and is dropped and counted before ENet reads it, so an altered control
# message is sent again instead of ending the connection; every hash log equals the server's, and
# the capture holds neither a key, a name nor a rejoin secret, nor play messages with readable
# structure. The same capture check on a session in the clear finds all of those (it can fail).
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(dirname "$0")
"$BIN/lockstep-token" keygen -o "$WORK/token.key" || fail "keygen"
[ "$(stat -c %a "$WORK/token.key")" = 600 ] || fail "the key file is not mode 600"
TICKS=1200
"$BIN/lockstep-server" --port "$PORT" --players 3 --ticks $TICKS --token-key "$WORK/token.key" \
    --hash-log "$WORK/server.log" --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
clients=(); relays=()
for i in 1 2 3; do
  "$BIN/lockstep-token" mint --key "$WORK/token.key" --client-id $((1000 + i)) --server "127.0.0.1:$PORT" \
      --expires-in 60 -o "$WORK/t$i.token" || fail "mint"
  echo "Zq$i-Secret-Name" >"$WORK/name$i"
  "$BIN/lockstep-netsim" --listen $((PORT + i)) --forward "127.0.0.1:$PORT" --delay 40 --jitter 5 --loss 2 \
      --tamper 3 --tamper-control 70 --replay 3 --inject 3 --seed $i --dump "$WORK/cap$i.pcap" --summary "$WORK/ns$i.json" 2>"$WORK/ns$i.err" &
  relays+=($!); PIDS+=($!)
  "$BIN/lockstep-client" --connect-token "$WORK/t$i.token" --connect "127.0.0.1:$((PORT + i))" --name "Zq$i-Secret-Name" \
      --bot $i --hash-log "$WORK/c$i.log" --rejoin-file "$WORK/rejoin$i" --summary "$WORK/c$i.json" 2>"$WORK/c$i.err" &
  clients+=($!); PIDS+=($!)
done
for i in 0 1 2; do expect_exit "${clients[$i]}" 0 "sealed client $((i + 1))"; done
expect_exit $S 0 "sealed server"
for r in "${relays[@]}"; do kill -INT "$r"; wait "$r"; done
for i in 1 2 3; do cmp -s "$WORK/server.log" "$WORK/c$i.log" || fail "client $i hash log differs from the server's"; done
[ "$(wc -l <"$WORK/server.log")" = $TICKS ] || fail "server hash log length"
echo "ok: three sealed clients through the attacker are hash-equal with the server for $TICKS ticks"
json_check "$WORK/server.json" 'd["sealed"] and d["desyncs"] == [] and d["kicked"] == 0' "a sealed session without desync or kick"
json_check "$WORK/server.json" 'd["datagrams_refused"] >= 30' "the server refused and counted the altered, replayed and forged datagrams"
json_check "$WORK/server.json" 'd["dropped"] == 0 and d["sealed_dropped"] == {"forged": 0, "replayed": 0}' \
    "no altered datagram got past the datagram check on the server"
python3 - "$WORK" <<'PY' || fail "the relays did not alter control messages, and play messages, both ways"
import json, sys
r = [json.load(open("%s/ns%d.json" % (sys.argv[1], i)))["attacks"] for i in (1, 2, 3)]
total = {(way, k): sum(a[way][k] for a in r) for way in ("up", "down") for k in r[0]["up"]}
print("relays, all three:", ", ".join("%s %s %d" % (way, k, n) for (way, k), n in sorted(total.items())))
sys.exit(0 if min(total.values()) > 0 else 1)
PY
for i in 1 2 3; do
  json_check "$WORK/c$i.json" 'd["datagrams_refused"] > 0 and d["dropped"] == 0' \
      "client $i refused and counted altered and forged datagrams, and nothing got past the check"
done
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("server: datagrams refused %d; wire bytes per client-tick up %.1f, down %.1f" % (s["datagrams_refused"], s["wire_bytes_per_client_tick"]["up"], s["wire_bytes_per_client_tick"]["down"]))' "$WORK/server.json"

# The captures: nothing secret, nothing readable.
for i in 1 2 3; do
  [ -s "$WORK/rejoin$i" ] || fail "client $i wrote no rejoin secret"
  python3 "$HERE/sealed_capture.py" "$WORK/cap$i.pcap" "$WORK/token.key" "$WORK/t$i.token" "$WORK/name$i" "$WORK/rejoin$i" \
      >"$WORK/cap$i.json" || fail "reading capture $i"
  json_check "$WORK/cap$i.json" 'd["datagrams"] > 1000 and d["play_messages"] > 1000' "capture $i holds the session"
  json_check "$WORK/cap$i.json" 'd["found"] == []' "capture $i holds no key, name or rejoin secret"
  json_check "$WORK/cap$i.json" 'd["common_prefix_share"] < 0.02 and d["lsk1_messages"] <= 6' \
      "capture $i: play messages without readable structure, no Message in the clear past the handshake"
done

# The same check on a session in the clear finds what it looks for.
P2=$((PORT + 10))
"$BIN/lockstep-server" --port $P2 --players 1 --ticks 300 --summary "$WORK/clear.json" 2>"$WORK/clear-server.err" &
S=$!; PIDS+=($S)
"$BIN/lockstep-netsim" --listen $((P2 + 1)) --forward "127.0.0.1:$P2" --tamper 3 --inject 5 --seed 7 --dump "$WORK/clear.pcap" \
    --summary "$WORK/clear-ns.json" 2>"$WORK/clear-ns.err" &
R=$!; PIDS+=($R)
"$BIN/lockstep-client" --connect "127.0.0.1:$((P2 + 1))" --name "Zq1-Secret-Name" --bot 1 --rejoin-file "$WORK/clear-rejoin" \
    >/dev/null 2>"$WORK/clear-client.err" &
C=$!; PIDS+=($C)
expect_exit $C 0 "client in the clear"
expect_exit $S 0 "server in the clear"
kill -INT $R; wait $R
# In the clear the keyless check still refuses the altered datagrams, while the injected ones,
# whose check the relay computed from the connection id, reach the decoder: the relay's checks
# are right, so the sealed run above refused its forgeries for want of the key.
json_check "$WORK/clear.json" 'd["datagrams_refused"] > 0 and d["drops"].get("malformed", 0) > 0 and d["kicked"] == 0' \
    "in the clear: altered datagrams refused, forged ones with a computed check reaching the decoder"
python3 "$HERE/sealed_capture.py" "$WORK/clear.pcap" "$WORK/name1" "$WORK/clear-rejoin" >"$WORK/clear-cap.json" || fail "reading the clear capture"
json_check "$WORK/clear-cap.json" 'len(d["found"]) == 2 and d["common_prefix_share"] > 0.5' \
    "the capture check finds the name, the rejoin secret and the play messages' structure in the clear"
# A token naming two servers: the first knows itself by another address than the token gives
# (WrongServer), so the client goes on to the second at once.
P3=$((PORT + 14))  # within the test's block of 20 ports (lib.sh)
"$BIN/lockstep-server" --port $P3 --players 1 --ticks 100 --token-key "$WORK/token.key" --public-address "10.9.9.9:$P3" \
    2>"$WORK/wrong-server.err" &
W=$!; PIDS+=($W)
"$BIN/lockstep-server" --port $((P3 + 1)) --players 1 --ticks 100 --token-key "$WORK/token.key" --summary "$WORK/walk-server.json" \
    2>"$WORK/walk-server.err" &
S=$!; PIDS+=($S)
"$BIN/lockstep-token" mint --key "$WORK/token.key" --client-id 2000 --server "127.0.0.1:$P3" --server "127.0.0.1:$((P3 + 1))" \
    --user-data 0700FF -o "$WORK/walk.token" || fail "mint a token of two servers"
"$BIN/lockstep-token" mint --key "$WORK/token.key" --client-id 1 --server "127.0.0.1:$P3" --user-data 0g -o /dev/null 2>/dev/null
[ $? = 2 ] || fail "--user-data 0g was not refused as a usage error"
"$BIN/lockstep-client" --connect-token "$WORK/walk.token" --bot 1 --summary "$WORK/walk.json" >/dev/null 2>"$WORK/walk.err" &
C=$!; PIDS+=($C)
expect_exit $C 0 "the client of a two-server token"
expect_exit $S 0 "the token's second server"
json_check "$WORK/walk.json" 'd["servers_tried"] == 2 and d["tick"] == 100' "the client did not go on to the token's second server"
json_check "$WORK/walk-server.json" 'd["seats"][0]["client_id"] == 2000 and d["seats"][0]["user_data"] == "0700ff"' \
    "the server's summary does not name the seat's client and the token's user data"
grep -q "refused (WrongServer); trying the connect token's next server" "$WORK/walk.err" || fail "no WrongServer refusal from the first server"
kill $W 2>/dev/null
echo "PASS: sealed play survives tampering, replays and injection hash-equal, and its capture reveals nothing"
