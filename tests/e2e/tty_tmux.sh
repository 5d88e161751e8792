#!/usr/bin/env bash
# The terminal view in a real terminal (tmux): the arena and the heads-up line are on screen,
# q leaves cleanly, and the terminal is restored afterwards; the skirmish's keys give orders.
source "$(dirname "$0")/lib.sh" "$1"
command -v tmux >/dev/null || fail "tmux is not installed (./quickstart installs it)"
SOCK="$WORK/tmux.sock"
T="tmux -S $SOCK"
"$BIN/lockstep-server" --port "$PORT" --players 1 --hash-log "$WORK/server.log" >"$WORK/server.json" 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
$T new-session -d -x 100 -y 34 -s view "bash --norc --noprofile"
trap '$T kill-server 2>/dev/null; cleanup' EXIT
$T send-keys -t view "$BIN/lockstep-client --connect 127.0.0.1:$PORT --name viewer --render tty --fps 30 --hash-log $WORK/viewer.log 2>$WORK/viewer.err; echo EXIT=\$?; stty -a | grep -o -- '-\?icanon' | head -1" Enter
for i in $(seq 150); do
  $T capture-pane -t view -p >"$WORK/screen.txt"
  grep -q 'tick [1-9][0-9]* *fps.*in sync' "$WORK/screen.txt" && grep -q '@' "$WORK/screen.txt" && break
  sleep 0.1
done
grep -q 'tick [1-9][0-9]* *fps' "$WORK/screen.txt" || fail "no heads-up line on screen: $(cat "$WORK/screen.txt")"
grep -q 'in sync' "$WORK/screen.txt" || fail "heads-up line lacks the desync state"
grep -q '^+---' "$WORK/screen.txt" || fail "no arena border on screen"
grep -q '@' "$WORK/screen.txt" || fail "the local player is not drawn"
grep -q 'o' "$WORK/screen.txt" || fail "no bodies drawn"
$T send-keys -t view Right  # steering must not disturb anything
sleep 0.5
$T send-keys -t view q
for i in $(seq 150); do
  $T capture-pane -t view -p >"$WORK/after.txt"
  # Whole lines only: the command line on screen contains the word 'icanon' too.
  grep -q -- '^-\?icanon *$' "$WORK/after.txt" && break
  sleep 0.1
done
grep -q '^EXIT=0 *$' "$WORK/after.txt" || fail "client did not exit 0 after q: $(cat "$WORK/after.txt")"
grep -q -- '^-icanon *$' "$WORK/after.txt" && fail "terminal left in raw mode"
grep -q '^icanon *$' "$WORK/after.txt" || fail "no stty output"
grep -q 'tick [0-9]* *fps' "$WORK/after.txt" && fail "the arena is still on screen: alternate screen not left"
kill -INT $S 2>/dev/null; wait $S
json_check "$WORK/server.json" '[(x["name"], x["reason"]) for x in d["departures"]] == [("viewer", "left (the player quit)")]' "the server did not see a clean leave"

# The skirmish in the terminal: keys give orders (Space selects the army, W attack-moves it to the
# top-left ninth, Enter stops it), and the orders reach the server as commands.
P2=$((PORT + 1))
"$BIN/lockstep-server" --sim skirmish --world units=30,map=48 --port "$P2" --players 1 --summary "$WORK/rts-server.json" \
    2>"$WORK/rts-server.err" &
S2=$!; PIDS+=($S2)
$T new-session -d -x 100 -y 34 -s rts "bash --norc --noprofile"
$T send-keys -t rts "$BIN/lockstep-client --sim skirmish --connect 127.0.0.1:$P2 --name general --render tty --fps 30 --summary $WORK/rts.json 2>$WORK/rts.err; echo EXIT=\$?" Enter
for i in $(seq 150); do
  $T capture-pane -t rts -p >"$WORK/rts-screen.txt"
  grep -q 'tick [1-9][0-9]* *fps.*in sync' "$WORK/rts-screen.txt" && break
  sleep 0.1
done
grep -q 'P0 30' "$WORK/rts-screen.txt" || fail "the skirmish's label is not on screen: $(cat "$WORK/rts-screen.txt")"
for key in Space W Enter; do $T send-keys -t rts "$key"; sleep 0.3; done
$T send-keys -t rts q
for i in $(seq 100); do $T capture-pane -t rts -p | grep -q '^EXIT=' && break; sleep 0.1; done
$T capture-pane -t rts -p | grep -q '^EXIT=0 *$' || fail "the skirmish client did not exit 0 after q"
kill -INT $S2 2>/dev/null; wait $S2
json_check "$WORK/rts.json" 'd["commands_sent"] >= 3' "the keys did not become commands"
json_check "$WORK/rts-server.json" 'd["commands"] >= 3' "the commands did not reach the server"
echo "PASS: tty view drawn, q leaves cleanly, terminal restored; the skirmish's keys give orders"
