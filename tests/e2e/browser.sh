#!/usr/bin/env bash
# A browser player in a real session: lockstep-web (the client in WebAssembly) in headless
# Chromium, driven through the DevTools protocol (browser.py), joins through the server's
# WebSocket door beside two native bots and a native drawing client, everyone through
# lockstep-netsim at 40 ms one way with 2 % loss (the browser's TCP through its --tcp mode, the
# page and its wasm too), for 1500 ticks. The browser's hash log must equal the server's, a
# screenshot must show the discs, a frozen tab (no frames, no timers: as hidden) must not slow the
# others, and a desync injected into the browser must be caught and localized as a native one's.
# Then a studio's own game (examples/orbits, a module built out of tree) in the page: the server
# hosts its native build (--sim-lib), the page has it linked into its wasm, and they agree.
# Usage: browser.sh BIN_DIR WEB_BUILD_DIR   (the web build is made or brought up to date there
# with tools/build-web.sh; exit 77, skipped, when emscripten or Chromium is not installed)
HERE=$(cd "$(dirname "$0")" && pwd)
if ! command -v emcmake >/dev/null || ! command -v chromium >/dev/null || ! /usr/bin/python3 -c 'import websockets' 2>/dev/null; then
  echo "SKIP: the browser test needs emscripten, chromium and python3-websockets (./quickstart test installs them)"
  exit 77
fi
E2E_TIMEOUT=${E2E_TIMEOUT:-500}  # the web build first, then two sessions
source "$HERE/lib.sh" "$1"
# With a studio's own game (examples/orbits, its project unchanged) built into a page of its own.
"$HERE/../../tools/build-web.sh" "${2:?web build dir}" --module "$HERE/../../examples/orbits=orbits" >"$WORK/build-web.log" 2>&1 ||
  { tail -30 "$WORK/build-web.log"; fail "tools/build-web.sh failed"; }
WEB=$2/web
[ -f "$WEB/lockstep-web.wasm" ] || fail "no lockstep-web.wasm in $WEB"

# session NAME TICKS PAGE_QUERY [browser.py options]: the four players; results in $WORK/NAME.
# With TOKENS=1 the server admits only connect-token holders and its door speaks wss:// and
# https:// (a self-signed certificate): the natives join with tokens over ENet, the page with its
# token in the address's fragment.
session() {
  local name=$1 ticks=$2 query=$3; shift 3
  local dir="$WORK/$name" base=$((PORT + 8 * ${SESSIONS:-0})) scheme=http fragment="" secure=() native=() i
  SESSIONS=$((${SESSIONS:-0} + 1))
  mkdir -p "$dir"
  if [ "${TOKENS:-0}" = 1 ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -keyout "$dir/key.pem" -out "$dir/cert.pem" \
        >/dev/null 2>&1 || fail "openssl could not make a certificate"
    "$BIN/lockstep-token" keygen -o "$dir/token.key" >/dev/null || fail "lockstep-token keygen"
    for i in 1 2 3 4; do
      "$BIN/lockstep-token" mint --key "$dir/token.key" --client-id $((300 + i)) --server "127.0.0.1:$base" \
          --expires-in 300 --format "$([ $i = 4 ] && echo base64 || echo binary)" -o "$dir/t$i.token" >/dev/null \
        || fail "lockstep-token mint"
    done
    secure=(--token-key "$dir/token.key" --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem")
    scheme=https
    fragment="#token=$(/usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(open(sys.argv[1]).read().strip(), safe=""))' "$dir/t4.token")"
    set -- "$@" --insecure
  fi
  # With DATAGRAMS=1 the server offers pages a data channel (--webrtc) on one UDP port, and tells
  # them to send to a lockstep-netsim in front of it with the native players' faults; with
  # DATAGRAMS=blocked it tells them an address where nothing answers (UDP blocked on the way).
  local webrtc=() dg=""
  case ${DATAGRAMS:-0} in
    1) webrtc=(--webrtc-ports $((base + 4))-$((base + 4)) --webrtc-address 127.0.0.1:$((base + 5))) ;;
    blocked) webrtc=(--webrtc-ports $((base + 4))-$((base + 4)) --webrtc-address 127.0.0.1:$((base + 6))) ;;
  esac
  "$BIN/lockstep-server" --port "$base" --bind 127.0.0.1 --players 4 --ticks "$ticks" --websocket-port $((base + 1)) \
      --web-root "$WEB" --hash-log "$dir/server.log" --summary "$dir/server.json" --desync-dir "$dir" "${secure[@]}" \
      "${webrtc[@]}" 2>"$dir/server.err" &
  local s=$!; PIDS+=($s)
  if [ "${DATAGRAMS:-0}" = 1 ]; then
    "$BIN/lockstep-netsim" --listen $((base + 5)) --forward "127.0.0.1:$((base + 4))" --delay 40 --jitter 5 \
        --loss "${LOSS:-2}" --seed 3 --summary "$dir/dg.json" 2>"$dir/dg.err" &
    dg=$!; PIDS+=($dg)
  fi
  "$BIN/lockstep-netsim" --listen $((base + 2)) --forward "127.0.0.1:$base" --delay 40 --jitter 5 --loss "${LOSS:-2}" --seed 1 \
      --summary "$dir/ns.json" 2>"$dir/ns.err" &
  local ns=$!; PIDS+=($ns)
  "$BIN/lockstep-netsim" --tcp --listen $((base + 3)) --forward "127.0.0.1:$((base + 1))" --delay 40 --jitter 5 --loss "${LOSS:-2}" \
      --seed 2 --summary "$dir/tcp.json" 2>"$dir/tcp.err" &
  local tcp=$!; PIDS+=($tcp)
  sleep 0.3
  local c=()
  for i in 1 2; do
    [ "${TOKENS:-0}" = 1 ] && native=(--connect-token "$dir/t$i.token")
    "$BIN/lockstep-client" --connect "127.0.0.1:$((base + 2))" --name "bot$i" --bot "$i" --hash-log "$dir/bot$i.log" \
        --summary "$dir/bot$i.json" "${native[@]}" 2>"$dir/bot$i.err" &
    c+=($!); PIDS+=($!)
  done
  [ "${TOKENS:-0}" = 1 ] && native=(--connect-token "$dir/t3.token")
  "$BIN/lockstep-client" --connect "127.0.0.1:$((base + 2))" --name native --bot 3 --predict 8 --fps 60 \
      --hash-log "$dir/native.log" --summary "$dir/native.json" "${native[@]}" 2>"$dir/native.err" &
  c+=($!); PIDS+=($!)
  /usr/bin/python3 "$HERE/browser.py" "$scheme://127.0.0.1:$((base + 3))/?name=web&$query$fragment" --out "$dir/page.json" \
      --timeout 90 "$@" >"$dir/browser.out" 2>"$dir/browser.err" || { cat "$dir/browser.err"; fail "$name: browser.py failed"; }
  SERVER_PID=$s CLIENT_PIDS=("${c[@]}")
  wait $s; SERVER_EXIT=$?
  for i in "${c[@]}"; do wait "$i"; done
  kill -INT $ns $tcp $dg; wait $ns $tcp $dg
  python3 - "$dir/page.json" "$dir/page.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
open(sys.argv[2], "w").write(d["hashes"])
PY
}

# 1. A session at 40 ms and 2 % loss; from tick 600 the page serves its session once a second for
#    3 s, as a hidden tab's throttled timer does (no animation frames).
session play 1500 "bot=7&slow_at=600&slow_for=3" --screenshot "$WORK/play/shot.png" --screenshot-at 400
D=$WORK/play
[ "$SERVER_EXIT" = 0 ] || fail "play: the server exited $SERVER_EXIT"
json_check "$D/page.json" 'd["exit"] == 0' "the browser's client ended cleanly"
json_check "$D/page.json" 'not d["errors"]' "the page had no errors"
json_check "$D/page.json" 'd["slowed"]["at_tick"] >= 600 and d["slowed"]["frames"] >= 3' "the tab ran at 1 fps for 3 s"
# The prediction follows the round trip (40 ms each way): well past a loopback's few ticks (29 on a
# quiet machine); and the page says it is held at its limit of 64 exactly when it reaches it (on a
# busy machine a slow page's sampling runs that far ahead of its confirmed frames).
json_check "$D/page.json" 'd["predicted_ahead_max"] >= 8 and d["held_said"] == (d["predicted_ahead_max"] >= 64)' \
  "the prediction did not follow the round trip: $(json_get "$D/page.json" 'd["predicted_ahead_max"], d["held_said"]')"
[ "$(wc -l <"$D/server.log")" = 1500 ] || fail "play: the server's hash log is not 1500 ticks"
cmp -s "$D/server.log" "$D/page.log" || fail "play: the browser's hash log differs from the server's"
for n in bot1 bot2 native; do cmp -s "$D/server.log" "$D/$n.log" || fail "play: $n's hash log differs"; done
echo "ok: the browser's 1500 tick hashes equal the server's (and the native players')"
json_check "$D/server.json" 'd["websocket"]["upgraded"] >= 1 and d["desyncs"] == []' "one browser through the door, no desync"
# The slow tab kept pace (it samples ahead by its lead, stepping what waits when it wakes) or was
# filled; the session kept its pace, and the others were not held back.
json_check "$D/server.json" '[sum(s["fills"].values()) for s in d["seats"] if s["name"] == "web"][0] > 0 and all(sum(s["fills"].values()) <= 15 for s in d["seats"] if s["name"] != "web")' "the slow tab's late inputs were filled, and only its"
json_check "$D/server.json" 'd["ticks_per_second_after_2s"] > 97' "the session kept its pace through the slow tab"
for n in bot1 bot2 native; do json_check "$D/$n.json" 'd["inputs_filled"] <= 15' "$n was not held back by the slow tab"; done
json_check "$D/tcp.json" 'd["connections"] >= 3 and d["up"]["lost"] + d["down"]["lost"] > 0' "the browser's TCP met losses"
# The screenshot shows the discs: the local player's yellow and the others' blue, on the dark field.
python3 - "$D/shot.png" "$HERE" <<'PY' || fail "play: the screenshot shows no discs"
import sys
sys.path.insert(0, sys.argv[2])
import page_png as png
yellow = blue = grey = 0
for row in png.rgb_rows(sys.argv[1]):
    yellow += row.count((255, 200, 40))
    blue += row.count((80, 170, 255))
    grey += row.count((150, 160, 175))
print(f"screenshot: {yellow} yellow, {blue} blue, {grey} grey pixels")
assert yellow > 200 and blue > 600 and grey > 2000, (yellow, blue, grey)
PY
echo "ok: the canvas shows the browser player's disc, the three others' and the bodies"

json_check "$D/page.json" '"offers no datagram path" in d["figures"]["play_path"] and d["figures"]["datagrams"]["received"] == 0' \
  "a page whose server offers no data channel plays over its WebSocket and says why"

# 1b. Datagrams: the server offers a data channel (--webrtc), through a lockstep-netsim at 40 ms
#     with 2 % loss as the native players' datagrams are. The browser player's inputs are filled
#     no more often than a native player's (within 0.5 % of the ticks), and its hashes are theirs.
DATAGRAMS=1 session datagrams 3000 "bot=7"
D=$WORK/datagrams
[ "$SERVER_EXIT" = 0 ] || fail "datagrams: the server exited $SERVER_EXIT"
json_check "$D/page.json" 'd["exit"] == 0 and not d["errors"]' "the browser's client ended cleanly"
json_check "$D/page.json" 'd["figures"]["play_path"].startswith("datagrams") and d["figures"]["datagrams"]["received"] > 2500 and d["figures"]["datagrams"]["sent"] > 1000' \
  "the page played over its data channel: $(json_get "$D/page.json" 'd["figures"]["play_path"], d["figures"]["datagrams"]')"
json_check "$D/server.json" 'd["websocket"]["datagrams"]["channels"] == 1 and d["websocket"]["datagrams"]["messages_in"] > 1000 and d["websocket"]["datagrams"]["messages_out"] > 2500' \
  "the server's door counted the channel and its messages: $(json_get "$D/server.json" 'd["websocket"]["datagrams"]')"
json_check "$D/dg.json" 'd["up"]["lost"] > 10 and d["down"]["lost"] > 10' "the data channel's datagrams met losses: $(json_get "$D/dg.json" 'd["up"]["lost"], d["down"]["lost"]')"
cmp -s "$D/server.log" "$D/page.log" || fail "datagrams: the browser's hash log differs from the server's"
for n in bot1 bot2 native; do cmp -s "$D/server.log" "$D/$n.log" || fail "datagrams: $n's hash log differs"; done
FILLS='{s["name"]: sum(s["fills"].values()) for s in d["seats"]}'
echo "datagrams at 40 ms, 2 % loss, 3000 ticks: inputs filled by seat $(json_get "$D/server.json" "$FILLS")"
json_check "$D/server.json" "(lambda f: f['web'] <= max(f['native'], f['bot1'], f['bot2']) + 0.005 * 3000)($FILLS)" \
  "the browser player's inputs were filled more often than a native player's"
json_check "$D/server.json" 'd["ticks_per_second_after_2s"] > 97' "the session kept its pace"
# The server counts the page's datagrams lost on the way up (gaps in its DTLS records' numbers) as it
# counts a native player's play messages: about the 2 % netsim drops.
json_check "$D/server.json" '[0.005 <= s["loss"] <= 0.05 for s in d["seats"] if s["name"] == "web"] == [True]' \
  "the server's loss for the browser seat is not the path's: $(json_get "$D/server.json" '[(s["name"], s["loss"]) for s in d["seats"]]')"
echo "ok: a browser player over a data channel at 40 ms and 2 % loss: hash-equal, its inputs filled as a native player's"

# 1c. At 5 % loss on every path the session still runs at 100 ticks a second.
LOSS=5 DATAGRAMS=1 session datagrams5 1500 "bot=8"
D=$WORK/datagrams5
[ "$SERVER_EXIT" = 0 ] || fail "datagrams5: the server exited $SERVER_EXIT"
json_check "$D/page.json" 'd["exit"] == 0 and d["figures"]["play_path"].startswith("datagrams")' "the page played over its data channel at 5 % loss"
cmp -s "$D/server.log" "$D/page.log" || fail "datagrams5: the browser's hash log differs from the server's"
echo "5 % loss: $(json_get "$D/server.json" 'd["ticks_per_second_after_2s"]') ticks/s, inputs filled by seat $(json_get "$D/server.json" "$FILLS")"
json_check "$D/server.json" 'd["ticks_per_second_after_2s"] > 97' "the session did not hold 100 ticks/s at 5 % loss"

# 1d. UDP blocked on the way: the channel never opens, the page says so after 10 s and plays on
#     over its WebSocket, hash-equal.
DATAGRAMS=blocked session blocked 1500 "bot=9"
D=$WORK/blocked
[ "$SERVER_EXIT" = 0 ] || fail "blocked: the server exited $SERVER_EXIT"
json_check "$D/page.json" 'd["exit"] == 0 and "did not open within 10 s" in d["figures"]["play_path"] and d["figures"]["datagrams"]["received"] == 0' \
  "the page fell back to its WebSocket and said why: $(json_get "$D/page.json" 'd["figures"]["play_path"]')"
cmp -s "$D/server.log" "$D/page.log" || fail "blocked: the browser's hash log differs from the server's"
echo "ok: with UDP blocked the page fell back to its WebSocket by itself and said so"

# 1e. A hidden tab: the player switches to another tab for 30 s, Chromium throttling the hidden one
#     as it does a background tab (its timers once a second, then by a budget). The page's worker
#     clock serves it meanwhile: it stays in its seat (no rejoin, the server never drops it) and its
#     hashes stay the server's.
session hidden 4000 "bot=10" --throttled --hide-at 300 --hide-for 30
D=$WORK/hidden
[ "$SERVER_EXIT" = 0 ] || fail "hidden: the server exited $SERVER_EXIT"
echo "hidden tab: $(json_get "$D/page.json" 'd["hidden"]'), served $(json_get "$D/page.json" 'd["hidden_serves"]') times hidden by its $(json_get "$D/page.json" 'd["clock"]')"
json_check "$D/page.json" 'd["exit"] == 0 and all(s[1] == "hidden" for s in d["hidden"]["samples"]) and d["hidden"]["shown_at_tick"] > d["hidden"]["at_tick"] + 2500' "the tab was hidden for 30 s while its session went on"
json_check "$D/page.json" 'd["clock"] == "worker" and d["hidden_serves"] >= 100 and d["rejoins"] == []' \
  "the hidden page was not served by its worker's clock, or had to rejoin"
! grep -q "silent for" "$D/server.err" || fail "hidden: the server dropped the hidden page for silence"
cmp -s "$D/server.log" "$D/page.log" || fail "hidden: the browser's hash log differs from the server's"
echo "ok: a tab hidden for 30 s under Chromium's throttling stayed in its seat, hash-equal"

# 2. A desync injected into the browser player is caught and localized as a native one's, in a
#    session of connect tokens over wss:// (and ENet's sealing for the native players).
#    The page is steered by real key events here (no bot): thrust moves the player's own disc.
TOKENS=1 session desync 600 "desync=250" --keys "Up:1.2,Left:0.3,Down:1.2"
D=$WORK/desync
json_check "$D/server.json" 'len(d["desyncs"]) == 1 and d["desyncs"][0]["tick"] == 250 and d["desyncs"][0]["name"] == "web"' "the server caught the browser's desync at tick 250, naming it alone"
# Over wss:// the page stays connected to the end. (Chromium once carried its WebSocket in an
# HTTP/2 stream, whose connection the door's 5 s handshake deadline closed mid-session: the
# browser's seat was gone at about tick 370, and on a busy machine before its desync's report.)
json_check "$D/server.json" 'd["departures"] == []' "the browser left the wss:// session: $(json_get "$D/server.json" 'd["departures"]')"
json_check "$D/page.json" '"connection to the server was lost" not in d["figures"]["end_message"]' \
  "the page lost its wss:// connection: $(json_get "$D/page.json" 'd["figures"]["end_message"]')"
R=$(ls "$D"/desync-250-*.json 2>/dev/null | head -1)
[ -n "$R" ] || fail "desync: no desync-250 report"
json_check "$R" 'd["tick"] == 250 and d["where"] == "entity" and d["entity"] is not None and d["field"]' "the report localizes the browser's desync to an entity's field"
json_check "$R" 'd["server_value"]["bits"] != d["client_value"]["bits"]' "the report has both exact values"
json_check "$D/page.json" 'd["figures"]["desynced"]' "the browser's client was told it diverged"
for n in bot1 bot2 native; do json_check "$D/$n.json" 'not d["desynced"]' "$n was not blamed"; done
json_check "$D/page.json" 'all(((c["x"] - a["x"]) ** 2 + (c["y"] - a["y"]) ** 2) ** 0.5 > 1 for k, a, c in d["own_disc"] if k in ("Up", "Down")) and len(d["own_disc"]) == 3' "the keys steered the player's disc"
json_check "$D/server.json" 'd["sealed"] and d["websocket"]["upgraded"] >= 1 and [s for s in d["seats"] if s["name"] == "web"]' "the browser joined a token server through wss://"
# The browser's seat loses nothing on its stream: its loss reads 0, not the share of ticks its one
# message a frame does not end on (0.4 once).
json_check "$D/server.json" '[s for s in d["seats"] if s["name"] == "web" and s["loss"] < 0.01]' \
  "the browser's seat reports loss on a lossless stream: $(json_get "$D/server.json" '[s["loss"] for s in d["seats"] if s["name"] == "web"]')"
grep -q "(web) joined from ws:127.0.0.1:[1-9]" "$D/server.err" ||
  fail "the server does not name the browser's address over wss:// (it logged ws::0 once): $(grep '(web) joined' "$D/server.err" | head -2)"
# A token that is not base64 is said on the page (it once left the page on "loading…" forever).
B=$((PORT + 16))  # after the two sessions' ports (8 each), in this test's block of 20
"$BIN/lockstep-server" --port "$B" --bind 127.0.0.1 --players 1 --websocket-port $((B + 1)) --web-root "$WEB" \
    2>"$WORK/badtoken-server.err" &
BS=$!; PIDS+=($BS)
sleep 0.5
/usr/bin/python3 "$HERE/browser.py" "http://127.0.0.1:$((B + 1))/?name=bad#token=%25%25not-base64" --out "$WORK/badtoken.json" \
    --timeout 20 >/dev/null 2>"$WORK/badtoken.err" || fail "browser.py on a bad token: $(cat "$WORK/badtoken.err")"
json_check "$WORK/badtoken.json" 'd["exit"] == 2 and "is not base64" in d["hud"] and not d.get("timed_out")' \
  "a token that is not base64 is not said on the page: $(json_get "$WORK/badtoken.json" 'd["hud"]')"
kill $BS 2>/dev/null
echo "ok: a bad token on the page: $(json_get "$WORK/badtoken.json" 'd["hud"]')"
# 3. The page survives a reload and a lost connection: it keeps the welcome's rejoin secret in
#    sessionStorage, a reload at tick 300 comes back into its seat with it, and when the relay to
#    the door is cut for 3 s after tick 800 the page says so and rejoins by itself.
J=$WORK/rejoin; mkdir -p "$J"; RP=$((PORT + 4))  # (the ports between the two sessions' blocks)
"$BIN/lockstep-server" --port "$RP" --bind 127.0.0.1 --players 3 --ticks 1500 --websocket-port $((RP + 1)) \
    --web-root "$WEB" --hash-log "$J/server.log" --summary "$J/server.json" 2>"$J/server.err" &
RS=$!; PIDS+=($RS)
relay() { "$BIN/lockstep-netsim" --tcp --listen $((RP + 2)) --forward "127.0.0.1:$((RP + 1))" --delay 20 --seed 3 2>>"$J/ns.err" & RN=$!; PIDS+=($RN); }
relay
sleep 0.3
for i in 1 2; do
  "$BIN/lockstep-client" --connect "127.0.0.1:$RP" --name "bot$i" --bot "$i" --hash-log "$J/bot$i.log" 2>"$J/bot$i.err" &
  PIDS+=($!)
done
/usr/bin/python3 "$HERE/browser.py" "http://127.0.0.1:$((RP + 2))/?name=web&bot=9&predict=2" --reload-at 300 --out "$J/page.json" \
    --timeout 120 >/dev/null 2>"$J/browser.err" &
RB=$!; PIDS+=($RB)
for _ in $(seq 1200); do [ "$(wc -l <"$J/server.log" 2>/dev/null || echo 0)" -ge 800 ] && break; sleep 0.05; done
kill -INT $RN; wait $RN
cut_at=$(wc -l <"$J/server.log")
sleep 3
relay
wait $RB || { cat "$J/browser.err"; fail "rejoin: browser.py failed"; }
wait $RS || fail "rejoin: the server exited $?: $(tail -3 "$J/server.err")"
kill -INT $RN 2>/dev/null; wait $RN 2>/dev/null
# (Chromium reports the connections refused while the relay is down as page errors: those only.)
json_check "$J/page.json" 'd["exit"] == 0 and all("WebSocket connection" in e and "REFUSED" in e for e in d["errors"])' \
  "rejoin: the page did not end cleanly: $(json_get "$J/page.json" 'd["hud"], d["errors"]')"
json_check "$J/page.json" 'd["resumed"] and d["reloaded_at_tick"] > 300' "rejoin: the reloaded page did not start from its stored secret"
# Its prediction limited to 2 ticks at 20 ms each way: the page says it is held at its limit.
json_check "$J/page.json" 'd["held_said"] and d["predicted_ahead_max"] == 2' "rejoin: the page did not say its prediction was held at its limit"
json_check "$J/page.json" 'len(d["rejoins"]) >= 1 and d["rejoins"][0]["attempt"] >= 1' "rejoin: the page did not rejoin after the cut: $(json_get "$J/page.json" 'd["rejoins"]')"
json_check "$J/server.json" 'd["joins_running"] >= 2 and d["desyncs"] == [] and len(d["seats"]) == 3' \
  "rejoin: the server did not take the page back into its seat twice: joins_running $(json_get "$J/server.json" 'd["joins_running"]')"
python3 -c 'import json, sys; open(sys.argv[2], "w").write(json.load(open(sys.argv[1]))["hashes"])' "$J/page.json" "$J/page.log"
python3 - "$J/server.log" "$J/page.log" "$cut_at" <<'PY' || fail "rejoin: the page's hashes after its rejoins are not the server's"
import sys
server = set(open(sys.argv[1]).read().split("\n")) - {""}
page = [l for l in open(sys.argv[2]).read().split("\n") if l]
assert page and all(l in server for l in page), [l for l in page if l not in server][:3]
ticks = [int(l.split()[0]) for l in page]
assert ticks[-1] == 1500 and any(t > int(sys.argv[3]) + 300 for t in ticks), (ticks[0], ticks[-1])
print(f"page after its reload: ticks {ticks[0]}..{ticks[-1]}, {len(ticks)} hashes, every one the server's")
PY
for i in 1 2; do cmp -s "$J/server.log" "$J/bot$i.log" || fail "rejoin: bot$i's hash log differs"; done
echo "ok: the page came back into its seat after a reload (tick $(json_get "$J/page.json" 'd["reloaded_at_tick"]')) and after its connection was cut at tick $cut_at ($(json_get "$J/page.json" 'd["rejoins"]'))"

# 4. A studio's own game in the page: orbits, linked into the page's wasm (tools/build-web.sh
#    --module), against the server's and a native bot's build of the same sources (--sim-lib).
O=$WORK/orbits; mkdir -p "$O"
g++ -std=c++20 -O2 -ffp-contract=off -fno-fast-math -fPIC -shared -fvisibility=hidden -I "$HERE/../../common/core/include" \
    "$HERE/../../examples/orbits/orbits.cpp" -o "$O/liborbits.so" || fail "orbits did not build natively"
[ -f "$2/web-orbits/lockstep-web.wasm" ] || fail "no page of orbits in $2/web-orbits"
OP=$((PORT + 18))
"$BIN/lockstep-server" --port "$OP" --bind 127.0.0.1 --players 2 --ticks 600 --sim-lib "$O/liborbits.so" \
    --websocket-port $((OP + 1)) --web-root "$2/web-orbits" --hash-log "$O/server.log" --summary "$O/server.json" \
    2>"$O/server.err" &
OS=$!; PIDS+=($OS)
sleep 0.5
"$BIN/lockstep-client" --connect "127.0.0.1:$OP" --sim-lib "$O/liborbits.so" --name native --bot 2 \
    --hash-log "$O/native.log" 2>"$O/native.err" &
ON=$!; PIDS+=($ON)
/usr/bin/python3 "$HERE/browser.py" "http://127.0.0.1:$((OP + 1))/?name=web&bot=5" --out "$O/page.json" --timeout 60 \
    --screenshot "$O/shot.png" --screenshot-at 300 --measure-load >/dev/null 2>"$O/browser.err" || { cat "$O/browser.err"; fail "orbits: browser.py failed"; }
wait $OS || fail "orbits: the server exited $?: $(tail -3 "$O/server.err")"
wait $ON
json_check "$O/page.json" 'd["exit"] == 0 and not d["errors"]' "the orbits page ended cleanly"
python3 -c 'import json, sys; open(sys.argv[2], "w").write(json.load(open(sys.argv[1]))["hashes"])' "$O/page.json" "$O/page.log"
[ "$(wc -l <"$O/server.log")" = 600 ] || fail "orbits: the server's hash log is not 600 ticks"
# (The page reloads once to measure a warm load, and comes back into its seat: its log is the
# hashes from its rejoin to the end, each the server's.)
python3 - "$O/server.log" "$O/page.log" <<'PY' || fail "orbits: the page's hashes are not the server's"
import sys
server = set(l for l in open(sys.argv[1]).read().split("\n") if l)
page = [l for l in open(sys.argv[2]).read().split("\n") if l]
assert len(page) > 300 and all(l in server for l in page) and page[-1].split()[0] == "600", (len(page), page[-1:])
PY
cmp -s "$O/server.log" "$O/native.log" || fail "orbits: the native bot's hash log differs from the server's"
json_check "$O/server.json" 'd["desyncs"] == [] and d["websocket"]["upgraded"] >= 1' "orbits: one browser through the door, no desync"
grep -q "orbits" "$O/server.err" || fail "orbits: the server does not say it hosts orbits"
# The canvas shows the game: the moons and ships orbits draws, not the arena's field.
python3 - "$O/shot.png" "$HERE" <<'PY' || fail "orbits: the screenshot shows nothing drawn"
import sys
sys.path.insert(0, sys.argv[2])
import page_png as png
colours = {}
for row in png.rgb_rows(sys.argv[1]):
    for px in row:
        colours[px] = colours.get(px, 0) + 1
background = max(colours, key=colours.get)
drawn = sum(n for c, n in colours.items() if c != background)
print(f"orbits screenshot: {drawn} pixels drawn over the background {background}, {len(colours)} colours")
assert drawn > 500 and len(colours) >= 3, (drawn, len(colours))
PY
echo "ok: a studio's own game (orbits) in the page: its hashes to tick 600 are the server's and a native bot's"
# Its delivery (the page came back after the reload that measures the warm load: a rejoin): the
# cold load in gzip, under half the files' bytes; the warm one a 304 for index.html alone.
python3 - "$O/page.json" <<'PY' || fail "orbits: the page's delivery"
import json, sys
d = json.load(open(sys.argv[1]))["load"]
cold, warm = d["cold"], d["warm"]
wire = lambda l: sum(f[1] for f in l["files"])
decoded = sum(f[3] for f in cold["files"])
print(f"page load: cold {wire(cold)} bytes on the wire for {decoded} bytes of files, ready at {cold['ready_ms']:.0f} ms; "
      f"warm {wire(warm)} bytes, ready at {warm['ready_ms']:.0f} ms")
assert len(cold["files"]) >= 4 and wire(cold) < decoded / 2, cold
# The page's files come under their content's hash (web/hashed_names.cmake), kept by the browser:
# a warm load asks for index.html alone (a 304) and takes the rest from its cache.
import re
hashed = [f for f in warm["files"] if re.fullmatch(r"lockstep(-web)?\.[0-9a-f]{16}\.(js|wasm)", f[0])]
assert len(hashed) == 3 and all(f[1] == 0 for f in hashed), warm
assert warm and len(warm["files"]) >= 4 and wire(warm) < 1000, warm
PY
# The page shows its own key to screen once keys were pressed (it once showed only the library's
# figure, 0.0 ms in a bot's session and a frame short with keys).
json_check "$WORK/desync/page.json" '__import__("re").search(r"key to screen [0-9.]+ ms", d["hud"])' \
  "the page does not show its key to screen figure: $(json_get "$WORK/desync/page.json" 'd["hud"]')"
# 5. A player's page on a phone (390x844, touch): no name in the address, so it opens on its join
#    screen; the name typed there joins; touches on its buttons and then a gamepad's stick steer it; the status overlay shows the round trip, the players and
#    the prediction; the touch controls fill the space under the world; the session's end is said
#    on an end screen. Screenshots of each (SHOTS_DIR keeps them, as docs/ has them).
P=$WORK/phone; mkdir -p "$P"; PP=$((PORT + 12))
"$BIN/lockstep-server" --port "$PP" --bind 127.0.0.1 --players 2 --ticks 1000 --websocket-port $((PP + 1)) \
    --web-root "$WEB" --hash-log "$P/server.log" --summary "$P/server.json" 2>"$P/server.err" &
PS=$!; PIDS+=($PS)
sleep 0.3
"$BIN/lockstep-client" --connect "127.0.0.1:$PP" --name native --bot 2 --hash-log "$P/native.log" 2>"$P/native.err" &
PIDS+=($!)
/usr/bin/python3 "$HERE/browser.py" "http://127.0.0.1:$((PP + 1))/" --viewport 390x844 --mobile --join-as carol \
    --touch "Up:1.2,Left:0.3,Down:1.2" --pad "Up:1.2,Down:1.2" \
    --screenshot-join "$P/join.png" --screenshot "$P/play.png" --screenshot-at 250 --screenshot-end "$P/end.png" \
    --out "$P/page.json" --timeout 60 >/dev/null 2>"$P/browser.err" || { cat "$P/browser.err"; fail "phone: browser.py failed"; }
wait $PS || fail "phone: the server exited $?"
json_check "$P/page.json" 'd["exit"] == 0 and not d["errors"]' "phone: the page did not end cleanly"
json_check "$P/server.json" '"carol" in [s["name"] for s in d["seats"]]' "phone: the name typed on the join screen is not the seat's"
# Steered by real touch events on its buttons, then by a gamepad's stick: each thrust moved its disc.
json_check "$P/page.json" 'len(d["own_disc_touch"]) == 3 and all(((c["x"] - a["x"]) ** 2 + (c["y"] - a["y"]) ** 2) ** 0.5 > 1 for k, a, c in d["own_disc_touch"] if k in ("Up", "Down"))' \
  "phone: touches did not steer the disc: $(json_get "$P/page.json" 'd["own_disc_touch"]')"
json_check "$P/page.json" 'len(d["own_disc_pad"]) == 2 and all(((c["x"] - a["x"]) ** 2 + (c["y"] - a["y"]) ** 2) ** 0.5 > 1 for k, a, c in d["own_disc_pad"])' \
  "phone: the gamepad did not steer the disc: $(json_get "$P/page.json" 'd["own_disc_pad"]')"
json_check "$P/page.json" '"carol" in d["hud"] and "round trip" in d["hud"] and "2 players" in d["hud"] and "prediction" in d["hud"]' "phone: the status overlay: $(json_get "$P/page.json" 'd["hud"]')"
json_check "$P/page.json" 'd["panel"] and "The session is over" in d["panel"] and "reached the last tick 1000" in d["panel"]' "phone: the end screen: $(json_get "$P/page.json" 'd["panel"]')"
python3 - "$P" "$HERE" <<'PY' || fail "phone: the screenshots"
import sys
sys.path.insert(0, sys.argv[2])
import page_png as png
d = sys.argv[1]
for name in ("join", "play", "end"):
    rows = list(png.rgb_rows(f"{d}/{name}.png"))
    assert len(rows) == 844 and len(rows[0]) == 390, (name, len(rows), len(rows[0]))
play = list(png.rgb_rows(f"{d}/play.png"))
# The world in the upper part, the touch controls' buttons (their border colour) in the lower third.
lower = sum(row.count((90, 95, 110)) for row in play[560:])
drawn = sum(1 for row in play[60:450] for px in row if px != (20, 22, 28))
print(f"phone screenshot: {drawn} pixels drawn in the world's part, {lower} of the controls' borders below it")
assert drawn > 2000 and lower > 200, (drawn, lower)
PY
[ -n "${SHOTS_DIR:-}" ] && cp "$P/join.png" "$P/play.png" "$P/end.png" "$SHOTS_DIR/"
echo "ok: a phone's page: joined from its join screen as carol, status overlay, touch controls, end screen"
# The page's own key to screen (key event to the end of the first frame drawn after it): printed,
# a figure, not a bound (a headless browser's frames are not a display's).
echo "ok: key to drawn frame (page), ms: $(json_get "$D/page.json" 'sorted(d["key_to_drawn_ms"])')"
echo "ok: the browser's desync at 250 was caught and localized to entity $(json_get "$R" 'd["entity"]') field $(json_get "$R" 'd["field"]')"
echo "PASS"
