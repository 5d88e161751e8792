#!/usr/bin/env bash
# The server is killed mid-session: every client notices, says so, and exits 4 within 5 s.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 2 --hash-log "$WORK/server.log" >/dev/null 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot a 1 --summary "$WORK/a.json"; A=$BOT_PID
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name b --bot 2 >/dev/null 2>"$WORK/b.err" &
B=$!; PIDS+=($B)
for i in $(seq 100); do [ "$(wc -l <"$WORK/a.log" 2>/dev/null || echo 0)" -ge 200 ] && break; sleep 0.05; done
kill -9 $S
t0=$(date +%s%N)
expect_exit $A 4 a
expect_exit $B 4 b
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $ms -le 5000 ] || fail "clients took $ms ms to notice"
json_check "$WORK/a.json" 'd["exit"] == 4 and ("stopped answering" in d["end"] or "connection to the server was lost" in d["end"])' "client a did not say why"
echo "PASS: both clients exited 4 within $ms ms of the server's death"
