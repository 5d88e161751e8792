#!/usr/bin/env bash
# A mixed UDP flood (udp-flood: about 110 000 datagrams a second from 200 loopback addresses,
# each at random empty, random bytes, 65 000 bytes or an ENet-like header) while two bots play.
# The server reads the flood as fast as it comes (a round that spends its reads is followed at
# once by the next, not at the next tick) into an 8 MiB socket buffer, so the kernel drops few
# datagrams and the players' get through: the bots play to the end hash-equal, and every flood
# datagram is counted by kind in the summary and in a status reply taken during the flood.
# Before, the server read 256 datagrams a tick and the kernel dropped 90 % of the flood, players'
# datagrams with it (17 to 35 inputs filled here; both bots dropped for hash silence elsewhere).
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 1500 --hash-log "$WORK/server.log" \
    --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
sleep 0.3
start_bot a 1 --summary "$WORK/a.json"; A=$BOT_PID
start_bot b 2 --summary "$WORK/b.json"; B=$BOT_PID
sleep 2
"$BIN/udp-flood" "$PORT" 8 110000 200 mixed >"$WORK/flood.json" 2>"$WORK/flood.err" &
F=$!; PIDS+=($F)
sleep 4
"$BIN/lockstep-server" --status "127.0.0.1:$PORT" >"$WORK/status.json" 2>"$WORK/status.err" || fail "no status during the flood"
wait $F || fail "udp-flood failed"
expect_exit $A 0 "bot a"
expect_exit $B 0 "bot b"
expect_exit $S 0 server
cmp -s "$WORK/server.log" "$WORK/a.log" && cmp -s "$WORK/server.log" "$WORK/b.log" || fail "a player's hashes differ"
[ "$(wc -l <"$WORK/server.log")" = 1500 ] || fail "the session did not reach tick 1500"
echo "flood: $(cat "$WORK/flood.json")"
echo "dropped: $(json_get "$WORK/server.json" 'd["datagrams_dropped"]')"
echo "figures: ticks/s $(json_get "$WORK/server.json" 'd["ticks_per_second_after_2s"]'), fills: server $(json_get "$WORK/server.json" '[s["fills"] for s in d["seats"]]'), inputs filled: a $(json_get "$WORK/a.json" 'd["inputs_filled"]'), b $(json_get "$WORK/b.json" 'd["inputs_filled"]')"
json_check "$WORK/server.json" 'd["kicked"] == 0' "a player was dropped during the flood"
SENT=$(json_get "$WORK/flood.json" 'd["sent"]')
# Every flood datagram counted somewhere (a few may still be in flight or read after the summary).
json_check "$WORK/server.json" "sum(d['datagrams_dropped'].values()) >= 0.95 * $SENT" "the flood's datagrams were not all counted"
json_check "$WORK/server.json" 'd["datagrams_dropped"]["empty"] > 0 and d["datagrams_dropped"]["oversized"] > 0 and d["datagrams_dropped"]["unknown_connection"] > 0 and d["datagrams_dropped"]["refused"] > 0' \
  "a kind of flood datagram was not counted"
# Read, not left to the kernel: under half the flood dropped for a full socket buffer (90 % before).
json_check "$WORK/server.json" "d['datagrams_dropped']['socket_buffer_full'] < 0.5 * $SENT" "the kernel dropped most of the flood: the server did not keep reading"
json_check "$WORK/status.json" 'd["full"] and d["datagrams_dropped"]["empty"] > 0 and d["datagrams_dropped"]["oversized"] > 0' \
  "the status reply does not count the flood's datagrams"
# Logged once a window (10 s), not once a datagram, with the flood's busiest source.
expect_window_log "$WORK/server.err" "datagrams dropped unread" "127\\.0\\.1\\."
echo "PASS"
