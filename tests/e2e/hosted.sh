#!/usr/bin/env bash
# One lockstep-server process hosting three relay-mode sessions on one thread (--sessions 3), as
# an operator packs matches on a core:
# - session 0: three bots, each through its own lockstep-netsim relay at 40 ms +- 10 ms one way
#   with 2 % loss: every settled hash equals every player's, to the last tick;
# - session 1: three bots on loopback, one perturbed at tick 200: it is named by the majority and
#   resynced, its report lands in session 1's own folder, and nobody else hears of it;
# - session 2: three bots, one killed midway: its seat is vacated, the other two play on to the end.
# Each session writes its own hash log, summary and recording ({session} in the paths), and its
# log lines name it. The process exits with the first session's outcome that is not 0 (3: the
# desync). One ops port (--metrics-port) describes the three sessions. The usage errors of
# --sessions are refused first; a simulating server hosts two sessions the same way last, its
# ticks at real-time priority (--realtime), and one refused it plays on.
source "$(dirname "$0")/lib.sh" "$1"
E2E_TIMEOUT=100
TICKS=800
"$BIN/lockstep-synctest" --describe >"$WORK/game.json" 2>"$WORK/describe.err" || fail "lockstep-synctest --describe failed"

# Paths one session would share with another, and the options that serve one session a process.
"$BIN/lockstep-server" --sessions 2 --relay "$WORK/game.json" --port "$PORT" --record "$WORK/one.replay" \
    >/dev/null 2>"$WORK/usage.err"
[ $? = 2 ] && grep -q "{session}" "$WORK/usage.err" || fail "--record without {session} was not refused: $(cat "$WORK/usage.err")"
"$BIN/lockstep-server" --sessions 2 --relay "$WORK/game.json" --port "$PORT" --agones >/dev/null 2>"$WORK/usage2.err"
[ $? = 2 ] && grep -q "agones" "$WORK/usage2.err" || fail "--agones with --sessions was not refused"
"$BIN/lockstep-server" --sessions 3 --relay "$WORK/game.json" --port 65534 >/dev/null 2>"$WORK/usage3.err"
[ $? = 2 ] && grep -q "65535" "$WORK/usage3.err" || fail "ports past 65535 were not refused"
timeout 10 "$BIN/lockstep-server" --sessions 3 --relay "$WORK/game.json" --port "$PORT" --websocket-port 65534 \
    >/dev/null 2>"$WORK/usage4.err"
[ $? = 2 ] && grep -q "from --websocket-port 65534: the ports run past 65535" "$WORK/usage4.err" ||
  fail "WebSocket ports past 65535 were not refused: $(tail -2 "$WORK/usage4.err")"

mkdir -p "$WORK/reports"
"$BIN/lockstep-server" --sessions 3 --relay "$WORK/game.json" --port "$PORT" --players 3 --ticks $TICKS \
    --on-desync resync --desync-dir "$WORK/reports" --play-silence-ms 1000 --session-id host \
    --hash-log "$WORK/settled-{session}.log" --summary "$WORK/summary-{session}.json" \
    --record "$WORK/session-{session}.replay" --metrics-port $((PORT + 20)) --metrics-bind 127.0.0.1 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
for i in 1 2 3; do
  "$BIN/lockstep-netsim" --listen $((PORT + 4 + i)) --forward "127.0.0.1:$PORT" --delay 40 --jitter 10 --loss 2 --seed $i \
      2>"$WORK/netsim$i.err" &
  PIDS+=($!)
done
sleep 0.3
bot() {  # bot NAME PORT SEED [options]: its hash log in $WORK/NAME.log
  local name=$1 port=$2 seed=$3
  shift 3
  "$BIN/lockstep-client" --connect "127.0.0.1:$port" --name "$name" --bot "$seed" --hash-log "$WORK/$name.log" "$@" \
      >/dev/null 2>"$WORK/$name.err" &
  BOT=$!; PIDS+=($BOT)
}
A=(); B=(); C=()
for i in 1 2 3; do bot "a$i" $((PORT + 4 + i)) $i; A+=($BOT); done
bot b1 $((PORT + 1)) 11; B+=($BOT)
bot b2 $((PORT + 1)) 12; B+=($BOT)
bot odd $((PORT + 1)) 13 --inject-desync-at 200; B+=($BOT)
bot c1 $((PORT + 2)) 21; C+=($BOT)
bot c2 $((PORT + 2)) 22; C+=($BOT)
bot gone $((PORT + 2)) 23; GONE=$BOT; PIDS+=($GONE)
# The third player of session 2 dies once play is under way (its hash log has passed tick 100).
for _ in $(seq 200); do
  [ "$(wc -l 2>/dev/null <"$WORK/gone.log" || echo 0)" -gt 100 ] && break
  sleep 0.05
done
kill -9 $GONE
# One ops port for the three sessions: each family once, each session's samples labelled with it,
# the port's own counters once; healthy, and ready while a session admits players.
/usr/bin/python3 - $((PORT + 20)) <<'PY' || fail "the ops port of a host of three sessions"
import re, sys, urllib.error, urllib.request
port = int(sys.argv[1])
def get(path):
    try:
        r = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5)
        return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
status, text = get("/metrics")
assert status == 200, status
helps = re.findall(r"^# HELP (\S+)", text, re.M)
assert len(helps) == len(set(helps)) and "lockstep_tick" in helps, helps
ticks = re.findall(r'^lockstep_tick\{session="(host-\d)"\} (\d+)$', text, re.M)
assert sorted(s for s, _ in ticks) == ["host-0", "host-1", "host-2"] and all(int(t) > 100 for _, t in ticks), ticks
assert len(re.findall(r'^lockstep_info\{session="host-\d",', text, re.M)) == 3, "lockstep_info"
assert len(re.findall(r'^lockstep_ops_requests_total\{outcome="answered"\}', text, re.M)) == 1, "the ops counters"
assert len(re.findall(r'^lockstep_seat_loss_ratio\{session="host-0",slot="\d"\}', text, re.M)) == 3, "session 0's seats"
assert len(re.findall(r'^lockstep_tick_lateness_seconds_bucket\{session="host-2",le="\+Inf"\}', text, re.M)) == 1
status, body = get("/healthz")
assert status == 200 and body.startswith("ok") and body.count("host-") == 3, (status, body)
status, body = get("/readyz")
assert body.count("host-") == 3, body
print(f"ops port: {len(helps)} families, lockstep_tick {dict(ticks)}; /readyz {status}: {body.splitlines()[0]}")
PY
for p in "${A[@]}"; do expect_exit "$p" 0 "session 0 player"; done
for p in "${B[@]::2}"; do expect_exit "$p" 0 "session 1 player"; done
expect_exit "${B[2]}" 0 "session 1's resynced player"
for p in "${C[@]::2}"; do expect_exit "$p" 0 "session 2 player"; done
expect_exit $S 3 "the host (session 1 saw a desync)"

grep -q "hosting 3 sessions on one thread, UDP ports $PORT-$((PORT + 2))" "$WORK/server.err" || fail "the host does not say what it hosts"
for s in 0 1 2; do
  [ "$(wc -l <"$WORK/settled-$s.log")" = $TICKS ] || fail "session $s did not settle all $TICKS ticks"
  json_check "$WORK/summary-$s.json" "d['session_id'] == 'host-$s' and d['host'] == {'sessions': 3, 'index': $s} and d['relay']['ticks_settled'] == $TICKS" \
    "session $s's summary is not its own"
  grep -q "session host-$s: done at tick $TICKS" "$WORK/server.err" || fail "session $s's lines do not name it"
done
for n in a1 a2 a3; do cmp "$WORK/settled-0.log" "$WORK/$n.log" || fail "session 0: $n's hashes differ from the settled ones"; done
for n in b1 b2; do cmp "$WORK/settled-1.log" "$WORK/$n.log" || fail "session 1: $n's hashes differ from the settled ones"; done
for n in c1 c2; do cmp "$WORK/settled-2.log" "$WORK/$n.log" || fail "session 2: $n's hashes differ from the settled ones"; done
# The desync is session 1's alone: its report in its own folder, its resync in its summary.
ls "$WORK"/reports/host-1/desync-200-*.json >/dev/null 2>&1 || fail "no report of tick 200 in session 1's folder: $(ls -R "$WORK/reports")"
[ "$(ls "$WORK/reports")" = host-1 ] || fail "reports outside session 1's folder: $(ls -R "$WORK/reports")"
json_check "$WORK/summary-1.json" 'd["resyncs"] >= 1 and len(d["desyncs"]) >= 1' "session 1 did not resync its odd player"
json_check "$WORK/summary-0.json" 'd["resyncs"] == 0 and len(d["desyncs"]) == 0 and d["filled_inputs"] < 100' \
  "session 0 saw a desync or lost its inputs"
json_check "$WORK/summary-2.json" 'd["resyncs"] == 0 and len(d["desyncs"]) == 0' "session 2 saw a desync"
grep -q "session host-2: .*gone" "$WORK/server.err" || fail "session 2 does not say its player was dropped: $(grep host-2 "$WORK/server.err" | tail -5)"
for s in 0 2; do
  "$BIN/lockstep-replay" verify "$WORK/session-$s.replay" >"$WORK/verify-$s.txt" 2>&1 \
    || fail "session $s's recording does not verify: $(tail -3 "$WORK/verify-$s.txt")"
done
# The simulating server hosts the same way: two sessions of two bots, each hash-equal to its own;
# with --realtime, its ticks' thread at SCHED_FIFO and the ops port's thread ordinary (where this
# machine lets a process ask: chrt; otherwise the server must say it could not, and play on).
if chrt -f 1 true 2>/dev/null; then RT=1; else RT=0; fi
"$BIN/lockstep-server" --sessions 2 --port $((PORT + 10)) --players 2 --ticks 300 --hash-log "$WORK/sim-{session}.log" \
    --summary "$WORK/sim-{session}.json" --realtime --metrics-port $((PORT + 21)) --metrics-bind 127.0.0.1 2>"$WORK/sim.err" &
S=$!; PIDS+=($S)
sleep 0.2
SIM=()
for i in 1 2 3 4; do bot "s$i" $((PORT + 10 + (i - 1) / 2)) $((30 + i)); SIM+=($BOT); done
# Each thread's scheduling policy while the match plays (/proc's stat, field 41: 0 ordinary, 1 FIFO).
/usr/bin/python3 - "$S" "$RT" <<'PY' || fail "the threads of a --realtime server"
import os, sys
pid, rt = sys.argv[1], sys.argv[2] == "1"
policy = {}
for tid in os.listdir(f"/proc/{pid}/task"):
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        policy[int(tid)] = int(f.read().rsplit(")", 1)[1].split()[38])
main = policy.pop(int(pid))
assert main == (1 if rt else 0), f"the ticks' thread has policy {main}"
assert policy and all(p == 0 for p in policy.values()), f"other threads: {policy}"
print(f"ok: the ticks' thread has policy {main}, its {len(policy)} other threads 0")
PY
for p in "${SIM[@]}"; do expect_exit "$p" 0 "a simulating session's player"; done
expect_exit $S 0 "the simulating host"
for i in 1 2 3 4; do
  cmp "$WORK/sim-$(((i - 1) / 2)).log" "$WORK/s$i.log" || fail "the simulating host's session $(((i - 1) / 2)) and its player s$i differ"
done
[ "$(wc -l <"$WORK/sim-0.log")" = 300 ] && [ "$(wc -l <"$WORK/sim-1.log")" = 300 ] || fail "a simulating session did not run 300 ticks"
if [ $RT = 1 ]; then
  grep -q "real-time priority: on" "$WORK/sim.err" || fail "the --realtime server does not say it runs at real-time priority"
  json_check "$WORK/sim-1.json" "d['scheduling']['realtime'] is True and d['scheduling']['wake_delay_us']['wakes'] > 100" \
    "the summary does not give the --realtime host's scheduling"
  # Refused (no CAP_SYS_NICE, ulimit -r 0): said, and the server hosts on at ordinary priority.
  prlimit --rtprio=0 setpriv --bounding-set -sys_nice "$BIN/lockstep-server" --realtime --port $((PORT + 12)) --players 1 \
      --ticks 50 --summary "$WORK/refused.json" 2>"$WORK/refused.err" &
  S=$!; PIDS+=($S)
  sleep 0.2
  bot r1 $((PORT + 12)) 41
  expect_exit $BOT 0 "the player of a server refused real-time priority"
  expect_exit $S 0 "a server refused real-time priority"
  grep -q -- "--realtime: not permitted (it needs CAP_SYS_NICE" "$WORK/refused.err" || fail "the refusal is not said: $(cat "$WORK/refused.err")"
  json_check "$WORK/refused.json" "d['scheduling']['realtime'] is False and 'CAP_SYS_NICE' in d['scheduling']['realtime_refused']" \
    "the refused server's summary"
fi
echo "PASS: one process hosted 3 relay-mode sessions on one thread: 40 ms with 2 % loss hash-equal, a desync named and resynced in its own session, a player killed and the rest played on; each session's files and lines its own; and 2 simulating sessions, their ticks at real-time priority (or refused, and said)"
