#!/usr/bin/env bash
# kill -9 of a client at tick 300 of 1500: the others reach tick 1500; the killed client,
# started again with its rejoin secret, is back in its slot, verified by a snapshot, and its
# hashes equal the server's until the end.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 3 --ticks 1500 --bodies 500 --hash-log "$WORK/server.log" \
    >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
for i in 1 2; do
  "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name "stay$i" --bot "$i" --hash-log "$WORK/stay$i.log" >/dev/null 2>"$WORK/stay$i.err" &
  PIDS+=($!); eval "A$i=$!"
done
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name phoenix --bot 3 --rejoin-file "$WORK/secret" \
    --hash-log "$WORK/first.log" >/dev/null 2>"$WORK/first.err" &
P=$!; PIDS+=($P)
for i in $(seq 200); do [ "$(wc -l <"$WORK/first.log" 2>/dev/null || echo 0)" -ge 300 ] && break; sleep 0.05; done
kill -9 $P; wait $P 2>/dev/null
[ -s "$WORK/secret" ] || fail "the client did not write its rejoin secret"
killed_at=$(tail -n1 "$WORK/first.log" | cut -d' ' -f1)
sleep 1
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name phoenix --bot 3 --rejoin-file "$WORK/secret" \
    --hash-log "$WORK/second.log" --summary "$WORK/second.json" 2>"$WORK/second.err" &
R=$!; PIDS+=($R)
expect_exit $R 0 "rejoined client"
expect_exit $A1 0 stay1
expect_exit $A2 0 stay2
expect_exit $S 0 server
cmp "$WORK/server.log" "$WORK/stay1.log" && cmp "$WORK/server.log" "$WORK/stay2.log" || fail "the others' hash logs differ"
[ "$(tail -n1 "$WORK/server.log" | cut -d' ' -f1)" = 1500 ] || fail "the session did not reach 1500"
json_check "$WORK/server.json" 'd["joins_running"] == 1 and d["verified"] == 1' "the rejoined player was not admitted and verified"
# (The slot may still be in the session when the player returns: the server fills its inputs until then.)
joined=$(json_get "$WORK/second.json" 'd["joined_at"]')
[ "$joined" -gt 300 ] || fail "joined_at $joined"
# Every tick the rejoined client executed matches the server, to the end.
n=$(wc -l <"$WORK/second.log")
[ "$n" -ge $((1500 - joined - 5)) ] || fail "rejoined client executed only $n ticks"
grep -Fxv -f "$WORK/server.log" "$WORK/second.log" | head -3 | grep -q . && fail "rejoined client's hashes differ from the server's"
[ "$(tail -n1 "$WORK/second.log" | cut -d' ' -f1)" = 1500 ] || fail "rejoined client did not reach 1500"

# A stale rejoin file (an earlier session's secret) does not end the client: it joins afresh as a
# new player where the session allows one (here its lobby), and the file then holds the new secret.
echo "0123456789abcdef0123456789abcdef" >"$WORK/stale"
# A module library, so the client's second attempt reuses the module it loaded (one per process).
"$BIN/lockstep-server" --port $((PORT + 3)) --players 1 --ticks 200 --sim-lib "$BIN/libwalkers.so" \
    --hash-log "$WORK/s3.log" >/dev/null 2>"$WORK/s3.err" &
S3=$!; PIDS+=($S3)
"$BIN/lockstep-client" --connect "127.0.0.1:$((PORT + 3))" --name again --bot 4 --rejoin-file "$WORK/stale" --sim-lib "$BIN/libwalkers.so" \
    --hash-log "$WORK/again.log" >/dev/null 2>"$WORK/again.err"
rc=$?; [ $rc = 0 ] || fail "the client with a stale rejoin file: exit $rc ($(tail -3 "$WORK/again.err"))"
expect_exit $S3 0 "the stale-file session's server"
grep -q "holds a secret this session does not know" "$WORK/again.err" || fail "the client did not say the file is stale"
[ "$(cat "$WORK/stale")" != "0123456789abcdef0123456789abcdef" ] || fail "the rejoin file still holds the stale secret"
cmp -s "$WORK/s3.log" "$WORK/again.log" || fail "the fresh join's hashes differ"
echo "ok: a stale rejoin file: warned, joined afresh, the file rewritten"
echo "PASS: killed at tick $killed_at, rejoined from tick $joined with a verified snapshot, equal hashes to 1500; a stale rejoin file joins afresh"
