#!/usr/bin/env bash
# Wrong token and a full session: the client says why on stderr and exits 4; bad usage exits 2.
source "$(dirname "$0")/lib.sh" "$1"
"$BIN/lockstep-server" --port "$PORT" --players 1 --token sesame --ticks 300 >/dev/null 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name intruder --token wrong >"$WORK/wrong.json" 2>"$WORK/wrong.err"
[ $? = 4 ] || fail "wrong token: expected exit 4"
json_check "$WORK/wrong.json" 'd["refused"] == "WrongToken" and d["exit"] == 4' "wrong token: no reason given"
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name first --token sesame --bot 1 >/dev/null 2>"$WORK/first.err" &
F=$!; PIDS+=($F)
sleep 0.5
"$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name second --token sesame >"$WORK/second.json" 2>"$WORK/second.err"
[ $? = 4 ] || fail "full session: expected exit 4"
json_check "$WORK/second.json" 'd["refused"] == "Full"' "full session: no reason given"
expect_exit $F 0 first
expect_exit $S 0 server
"$BIN/lockstep-server" --players 99 >/dev/null 2>&1; [ $? = 2 ] || fail "--players 99 should be bad usage"
"$BIN/lockstep-server" --bodies -5 >/dev/null 2>&1; [ $? = 2 ] || fail "--bodies -5 should be bad usage"
"$BIN/lockstep-client" --connect nonsense >/dev/null 2>&1; [ $? = 2 ] || fail "--connect nonsense should be bad usage"
"$BIN/lockstep-client" --connect "127.0.0.1:1" --name x >/dev/null 2>"$WORK/noserver.err"; [ $? = 4 ] || fail "no server: expected exit 4"
# Simulation modules: an unknown one and bad world settings are bad usage; --sim list lists them.
"$BIN/lockstep-server" --sim nope >/dev/null 2>"$WORK/sim.err"; [ $? = 2 ] || fail "--sim nope should be bad usage"
grep -q "no built-in simulation module 'nope'" "$WORK/sim.err" || fail "--sim nope: $(cat "$WORK/sim.err")"
"$BIN/lockstep-client" --sim nope --connect 127.0.0.1:1 >/dev/null 2>&1; [ $? = 2 ] || fail "client --sim nope should be bad usage"
"$BIN/lockstep-replay" --sim nope info x >/dev/null 2>&1; [ $? = 2 ] || fail "replay --sim nope should be bad usage"
"$BIN/lockstep-server" --world colour=red >/dev/null 2>&1; [ $? = 2 ] || fail "--world colour=red should be bad usage"
"$BIN/lockstep-server" --world bodies=2000000 >/dev/null 2>&1; [ $? = 2 ] || fail "--world bodies=2000000 should be bad usage"
"$BIN/lockstep-server" --sim list >"$WORK/list.txt" || fail "--sim list exited $?"
grep -q '^arena [0-9]*: .*seed=1' "$WORK/list.txt" || fail "--sim list: $(cat "$WORK/list.txt")"
for b in lockstep-server lockstep-client; do
  "$BIN/$b" --help | grep -q Exit || fail "$b --help"
  "$BIN/$b" --version | grep -q '0\.' || fail "$b --version"
done
echo "PASS: refusals and bad usage"
