#!/usr/bin/env bash
# The result webhook: every try of one result carries the same Idempotency-Key (BLAKE2b-128 of the
# document, so a backend that took a try whose answer was lost knows the retry); a result that
# no try delivers ends a finished session with exit 5 and a sentence, after the documented 4 tries.
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
python3 "$HERE/result_receiver.py" $((PORT + 5)) "$WORK" 2>"$WORK/receiver.err" &
PIDS+=($!)
"$BIN/lockstep-server" --port "$PORT" --players 1 --ticks 200 --result-webhook "http://127.0.0.1:$((PORT + 5))/results" \
    --summary "$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
sleep 0.3
start_bot a 1; A=$BOT_PID
expect_exit $A 0 "bot a"
expect_exit $S 0 "server (the second try delivered)"
[ "$(cat "$WORK/posts.count")" = 2 ] || fail "the backend saw $(cat "$WORK/posts.count") posts, not 2"
python3 - "$WORK" <<'PY' || fail "the tries' Idempotency-Key"
import hashlib, sys, pathlib
work = pathlib.Path(sys.argv[1])
keys = (work / "keys.txt").read_text().split()
assert len(keys) == 2 and keys[0] == keys[1], keys
want = hashlib.blake2b((work / "posted.json").read_bytes(), digest_size=16).hexdigest()
assert keys[0] == want, (keys[0], want)
print("ok: both tries carried Idempotency-Key", keys[0])
PY
# A backend that is not there: every try refused at once; exit 5 after the pauses, with a sentence.
"$BIN/lockstep-server" --port $((PORT + 1)) --players 1 --ticks 200 --result-webhook "http://127.0.0.1:$((PORT + 6))/none" \
    --result-webhook-timeout-ms 300 --summary "$WORK/gone.json" 2>"$WORK/gone.err" &
G=$!; PIDS+=($G)
sleep 0.3
"$BIN/lockstep-client" --connect "127.0.0.1:$((PORT + 1))" --name b --bot 2 >/dev/null 2>"$WORK/b.err" &
B=$!; PIDS+=($B)
expect_exit $B 0 "bot b"
expect_exit $G 5 "server whose result was never delivered"
grep -q "was not delivered to --result-webhook" "$WORK/gone.err" || fail "no sentence for the undelivered result"
[ "$(grep -c "result webhook: try" "$WORK/gone.err")" = 4 ] || fail "not 4 tries: $(grep -c "result webhook: try" "$WORK/gone.err")"
json_check "$WORK/gone.json" 'd["result"]["ticks"] == 200' "the summary lost the result"
echo "PASS"
