#!/usr/bin/env bash
# Random datagrams and floods at the server's port from other processes while a real session
# runs: the server stays up, the honest hash logs are identical, and rejections are counted.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 800 --hash-log "$WORK/server.log" \
    >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot a 1; A=$BOT_PID
start_bot b 2; B=$BOT_PID
python3 - "$PORT" <<'PY' &
import os, random, socket, sys, time
port = int(sys.argv[1]); rnd = random.Random(7)
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(20)]
end = time.time() + 5
while time.time() < end:
    for s in socks:
        # random bytes, ENet-looking headers with garbage commands, and oversized datagrams
        n = rnd.choice([1, 4, 12, 60, 300, 1400, 60000])
        data = bytes(rnd.getrandbits(8) for _ in range(min(n, 2000))) * (n // min(n, 2000))
        try: s.sendto(data[:n], ("127.0.0.1", port))
        except OSError: pass
    time.sleep(0.002)
PY
F=$!; PIDS+=($F)
# A flood of connection attempts that never join.
for i in $(seq 30); do
  timeout 3 "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name "ghost$i" --spectate >/dev/null 2>&1 &
done
wait $F
expect_exit $A 0 a
expect_exit $B 0 b
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/a.log" && cmp "$WORK/server.log" "$WORK/b.log" || fail "honest hash logs differ"
json_check "$WORK/server.json" 'd["desyncs"] == [] and d["divergent_ticks"] == 0' "a desync was reported"
echo "server: $(cat "$WORK/server.json")"
echo "PASS: the session completed under random datagrams and a connection flood"
