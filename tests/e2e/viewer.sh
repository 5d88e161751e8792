#!/usr/bin/env bash
# Seeing a desync: a broken module's synctest writes a bundle and page that a real browser shows;
# a long replay with keyframes seeks to any tick and verifies from one; bisect names where two
# builds part; a server's recording has keyframes; damaged files are refused with exit 2.
# Seven pages in headless Chromium and three sessions: past 105 s beside the
# determinism matrix in CI.
E2E_TIMEOUT=220
source "$(dirname "$0")/lib.sh" "$1"
R="$BIN/lockstep-replay"

# 1. The synctest of a module whose step reads an address: its bundle and page, in Chromium.
"$BIN/lockstep-synctest" --sim-lib "$BIN/libwalkers_broken1.so" --players 2 --ticks 200 --bundle-dir "$WORK" \
  --report "$WORK/synctest.json" --junit "$WORK/synctest.xml" 2>"$WORK/synctest.err"
[ $? = 3 ] || fail "the synctest of a broken module did not fail"
json_check "$WORK/synctest.json" 'any(c["check"] == "replay" and not c["ok"] and c["page"].endswith(".html") and c["bundle"].endswith(".bundle") for c in d["checks"])' "the report names no bundle and page"
PAGE=$(json_get "$WORK/synctest.json" '[c for c in d["checks"] if c["check"] == "replay"][0]["page"]')
grep -q "\[\[ATTACHMENT|$PAGE\]\]" "$WORK/synctest.xml" || fail "the JUnit report does not link the page"
# Under GitLab (CI_PROJECT_DIR) the attachment is relative to the project, as GitLab resolves it.
mkdir -p "$WORK/project"
ABS_BIN=$(cd "$BIN" && pwd)
(cd "$WORK/project" && CI_PROJECT_DIR="$WORK/project" "$ABS_BIN/lockstep-synctest" --sim-lib "$ABS_BIN/libwalkers_broken1.so" --players 2 \
  --ticks 200 --bundle-dir "$WORK/project/desyncs" --junit "$WORK/project/synctest.xml" >/dev/null 2>&1)
grep -Eq "\[\[ATTACHMENT\|desyncs/[^]/]+\.html\]\]" "$WORK/project/synctest.xml" ||
  fail "under GitLab the attachment is not relative to CI_PROJECT_DIR: $(grep -o 'ATTACHMENT|[^]]*' "$WORK/project/synctest.xml")"
# Any other CI names its folder with LOCKSTEP_ATTACHMENT_ROOT, which wins over CI_PROJECT_DIR.
(cd "$WORK/project" && LOCKSTEP_ATTACHMENT_ROOT="$WORK/project/desyncs" CI_PROJECT_DIR="$WORK/project" "$ABS_BIN/lockstep-synctest" \
  --sim-lib "$ABS_BIN/libwalkers_broken1.so" --players 2 --ticks 200 --bundle-dir "$WORK/project/desyncs" --junit "$WORK/project/root.xml" >/dev/null 2>&1)
grep -Eq "\[\[ATTACHMENT\|[^]/]+\.html\]\]" "$WORK/project/root.xml" ||
  fail "the attachment is not relative to LOCKSTEP_ATTACHMENT_ROOT: $(grep -o 'ATTACHMENT|[^]]*' "$WORK/project/root.xml")"
view_page "$PAGE" synctest
phone_fits "$PAGE" synctest
strict_csp_page "$PAGE" synctest
grep -q '<table id="difference-fields"' "$WORK/synctest-csp.dom" && grep -q '<table id="state-differs"' "$WORK/synctest-csp.dom" ||
  fail "without script the synctest page lacks what differs or the differing state"
page_commands "$PAGE" "$BIN/libwalkers_broken1.so"
# A C module's optional exports name its entities and read its inputs on the page.
grep -q 'walker of player 0' "$WORK/synctest.dom" && grep -q '>walk [+-]' "$WORK/synctest.dom" ||
  fail "the page does not name the walkers' entities or read their inputs through the module's exports"
grep -q 'data-tick="1" data-entity="" data-field="pulse"' "$WORK/synctest.dom" \
  || fail "the synctest page does not name tick 1, field pulse: $(grep -o 'id="headline"[^>]*>[^<]*' "$WORK/synctest.dom")"
# A check within one process (rollback, of a module whose step caches a value assuming time only
# moves forward) gets its bundle and page too.
"$BIN/lockstep-synctest" --sim-lib "$BIN/libwalkers_broken4.so" --players 2 --ticks 200 --bundle-dir "$WORK/rollback" \
  --report "$WORK/rollback.json" 2>/dev/null >/dev/null
json_check "$WORK/rollback.json" 'any(c["check"] == "rollback" and not c["ok"] and c["page"].endswith(".html") for c in d["checks"])' \
  "the failed rollback check has no page"
view_page "$(json_get "$WORK/rollback.json" '[c for c in d["checks"] if c["check"] == "rollback"][0]["page"]')" rollback
grep -q 'data-field="pulse">tick 1 · global field pulse · check rollback' "$WORK/rollback.dom" || fail "the rollback page does not name its tick and field"
# Its timeline holds the check's own two passes, the second red where it parts from the first.
grep -q '<td>after the load</td><td>1</td><td>0</td><td>1</td><td><span class="bad">tick 1</span></td>' "$WORK/rollback.dom" ||
  fail "the rollback page's timeline does not show the pass after the load parting from the first"
# Every party's own state out of the bundle (stored, not re-simulated), and two of them compared.
SB=$(json_get "$WORK/synctest.json" '[c for c in d["checks"] if c["check"] == "replay"][0]["bundle"]')
ST=$(json_get "$WORK/synctest.json" '[c for c in d["checks"] if c["check"] == "replay"][0]["tick"]')
"$R" info "$SB" --sim-lib "$BIN/libwalkers_broken1.so" >"$WORK/binfo.json" || fail "info on a bundle failed"
json_check "$WORK/binfo.json" "len(d['parties']) == 2 and all($ST in p['state_ticks'] for p in d['parties'])" "info does not list the bundle's parties and their states"
"$R" seek "$SB" "$ST" --party "run 1" -o "$WORK/p0.state" >"$WORK/p0.json" || fail "seek --party 'run 1' failed"
"$R" seek "$SB" "$ST" --party 1 -o "$WORK/p1.state" >"$WORK/p1.json" || fail "seek --party 1 failed"
json_check "$WORK/p0.json" 'd["stored"] and d["party"] == "run 1"' "seek --party did not return the stored state"
[ "$(json_get "$WORK/p0.json" 'd["hash"]')" != "$(json_get "$WORK/p1.json" 'd["hash"]')" ] || fail "the two runs' stored states are equal"
"$R" --sim-lib "$BIN/libwalkers_broken1.so" compare "$SB" "$WORK/p0.state" --with "$WORK/p1.state" >"$WORK/pc.json" 2>/dev/null
[ $? = 3 ] || fail "compare --with of two differing states did not exit 3"
json_check "$WORK/pc.json" "d['where'] != 'none' and d['tick'] == $ST and d['a_hash'] == '$(json_get "$WORK/p0.json" 'd["hash"]')'" "compare --with did not name where the stored states part"
"$R" seek "$SB" 99999 --party 0 2>"$WORK/pn.err"; [ $? = 2 ] && grep -q "holds ticks" "$WORK/pn.err" || fail "seek --party at a tick not held: $(cat "$WORK/pn.err")"
"$R" seek "$SB" "$ST" --party nobody 2>"$WORK/pn.err"; [ $? = 2 ] && grep -q "its parties: 0 'run 1', 1 'run 2'" "$WORK/pn.err" || fail "seek --party of no party: $(cat "$WORK/pn.err")"
echo "ok: synctest bundles and pages"

# 2. A long replay (10 minutes of play, a keyframe every 10 s): seek anywhere, verify from a keyframe.
"$R" record-scenario "$WORK/long.replay" --ticks 60000 2>"$WORK/rec.err" || fail "record-scenario failed"
json_check <("$R" info "$WORK/long.replay") 'd["keyframes"] == 60 and d["format_version"] == 4' "no keyframes in the long replay"
"$R" trace "$WORK/long.replay" --from 45678 --to 45678 >"$WORK/trace.txt" || fail "trace --from failed"
WANT=$(cut -d' ' -f2 "$WORK/trace.txt")
"$R" seek "$WORK/long.replay" 45678 -o "$WORK/state.bin" >"$WORK/seek.json" 2>"$WORK/seek.err" || fail "seek failed"
json_check "$WORK/seek.json" "d['hash'] == '$WANT' and d['keyframe'] == 45000 and d['ticks_stepped'] == 678" "seek did not reach the recorded state"
[ -s "$WORK/state.bin" ] || fail "seek wrote no state"
"$R" verify "$WORK/long.replay" --from 59000 >"$WORK/verify.txt" 2>&1 || fail "verify --from failed: $(cat "$WORK/verify.txt")"
grep -q "from the keyframe of tick 59000" "$WORK/verify.txt" && grep -q "OK 1000 ticks verified" "$WORK/verify.txt" \
  || fail "verify --from did not start at the keyframe: $(cat "$WORK/verify.txt")"
"$R" view "$WORK/long.replay" -o "$WORK/long.html" >/dev/null 2>"$WORK/view.err" || fail "view of a replay failed"
view_page "$WORK/long.html" replay
phone_fits "$WORK/long.html" replay
grep -q 'id="keyframe"' "$WORK/replay.dom" || fail "the replay page has no keyframe control"
page_commands "$WORK/long.html"
echo "ok: seek, verify --from and the replay page"

# 3. Bisect: two builds of a module (other rules) part; the tick, entity and field are named.
"$R" --sim-lib "$BIN/libwalkers.so" record-scenario "$WORK/w.replay" --ticks 3000 --keyframe-every 2 2>"$WORK/rec2.err" || fail "record of walkers failed"
"$R" --sim-lib "$BIN/libwalkers.so" bisect "$WORK/w.replay" --against-lib "$BIN/libwalkers_rules2.so" >"$WORK/bisect.json" 2>"$WORK/bisect.err"
[ $? = 3 ] || fail "bisect found no parting"
json_check "$WORK/bisect.json" 'd["parted"] and d["tick"] >= 1 and d["difference"]["where"] in ("entity", "global") and d["agrees_with_recording"] == "a"' "bisect did not name where the builds part"
# The builds by their files and build ids, in the JSON and the sentence.
json_check "$WORK/bisect.json" 'd["a"]["file"].endswith("libwalkers.so") and d["b"]["file"].endswith("libwalkers_rules2.so") and len(d["b"]["build_id"]) == 16 and d["exhaustive"]' "bisect did not name the builds"
grep -q "libwalkers_rules2.so, build [0-9a-f]\{16\}) part at tick" "$WORK/bisect.err" || fail "bisect's sentence does not name the builds: $(cat "$WORK/bisect.err")"
"$R" --sim-lib "$BIN/libwalkers.so" bisect "$WORK/w.replay" --against-lib "$BIN/libwalkers_rules2.so" --gallop >"$WORK/gallop.json" 2>/dev/null
json_check "$WORK/gallop.json" "d['tick'] == $(json_get "$WORK/bisect.json" 'd["tick"]') and d['mode'] == 'gallop'" "bisect and --gallop disagree"
# A build that copies padding bytes into its state: where the garbage changes between its runs it
# is named as differing from itself, never as a parting of the two builds; where it stays the same
# within the process (as under AddressSanitizer, whose allocator hands back the same bytes) the
# parting it reports is real: two different hashes, the bytes outside the fields named, and the
# recording on a's side. (core/keyframes checks the unsteady case with a build that is so for sure.)
"$R" --sim-lib "$BIN/libwalkers.so" bisect "$WORK/w.replay" --against-lib "$BIN/libwalkers_broken7.so" >"$WORK/b7.json" 2>"$WORK/b7.err"
[ $? = 3 ] || fail "bisect against walkers_broken7 passed"
json_check "$WORK/b7.json" '(not d["parted"] and d["unsteady"] == "b") or (d["parted"] and d["a_hash"] != d["b_hash"] and d["agrees_with_recording"] == "a" and d["difference"]["where"] == "outside fields")' \
  "bisect against walkers_broken7 reported neither a build that differs from itself nor a real parting"
if json_get "$WORK/b7.json" 'd.get("unsteady", "")' | grep -q b; then
  grep -q "differs from itself" "$WORK/b7.err" || fail "bisect did not say walkers_broken7 differs from itself: $(cat "$WORK/b7.err")"
fi
"$R" --sim-lib "$BIN/libwalkers.so" bisect "$WORK/w.replay" --against-lib "$BIN/libwalkers_rules2.so" --linear >"$WORK/linear.json" 2>/dev/null
json_check "$WORK/linear.json" "d['tick'] == $(json_get "$WORK/bisect.json" 'd["tick"]')" "bisect and --linear disagree"
"$R" --sim-lib "$BIN/libwalkers.so" bisect "$WORK/w.replay" --against-lib "$BIN/libwalkers.so" >"$WORK/same.json" 2>/dev/null \
  || fail "one build against itself parted"
json_check "$WORK/same.json" 'not d["parted"]' "one build against itself parted"
# The broken modules against the module they break: the libm one parts at once, named; one whose
# step caches a value across ticks parts as soon as a stretch starts from a keyframe; seek with
# a build that reads an address (other in every process) finds its state is not the recording's.
for n in 5 4; do
  "$R" --sim-lib "$BIN/libwalkers.so" bisect "$WORK/w.replay" --against-lib "$BIN/libwalkers_broken$n.so" >"$WORK/b$n.json" 2>/dev/null
  [ $? = 3 ] || fail "bisect against walkers_broken$n found no parting"
  json_check "$WORK/b$n.json" 'd["parted"] and d["difference"]["where"] != "none" and d["agrees_with_recording"] == "a"' "bisect against walkers_broken$n"
done
"$R" --sim-lib "$BIN/libwalkers_broken1.so" --any-build seek "$WORK/w.replay" 2345 >/dev/null 2>"$WORK/seek1.err"
[ $? = 3 ] && grep -q "is not the recorded" "$WORK/seek1.err" || fail "seek with a broken build did not report its state differs: $(cat "$WORK/seek1.err")"
echo "ok: bisect"

# 4. A server's recording has keyframes of its world, and verifies from one.
"$BIN/lockstep-server" --port "$PORT" --players 2 --ticks 300 --record "$WORK/session.replay" --keyframe-every 1 \
  >/dev/null 2>"$WORK/server.err" &
S=$!; PIDS+=($S)
start_bot a 1; A=$BOT_PID
start_bot b 2; B=$BOT_PID
expect_exit $S 0 server
wait $A; wait $B
json_check <("$R" info "$WORK/session.replay") 'd["keyframes"] == 3 and d["keyframe_interval"] == 100' "the server's recording has no keyframes"
"$R" verify "$WORK/session.replay" --from 150 >/dev/null 2>&1 || fail "the server's recording does not verify from its keyframe"
echo "ok: the server records keyframes"

# 4b. Names from the file are text on the page, never markup: a player named as an HTML element
# with a script handler, in a real session's bundle, shows as text in Chromium.
EVIL='<img src=x onerror=alert(1)>'
"$BIN/lockstep-server" --port $((PORT + 1)) --players 2 --ticks 400 --on-desync stop --desync-dir "$WORK/evil" --record "$WORK/evil.replay" \
  >/dev/null 2>"$WORK/evil-server.err" &
S=$!; PIDS+=($S)
mkdir -p "$WORK/evil"
"$BIN/lockstep-client" --connect "127.0.0.1:$((PORT + 1))" --name "$EVIL" --bot 1 >/dev/null 2>"$WORK/evil1.err" &
E1=$!; PIDS+=($E1)
"$BIN/lockstep-client" --connect "127.0.0.1:$((PORT + 1))" --name cheat --bot 2 --inject-desync-at 150 >/dev/null 2>"$WORK/evil2.err" &
E2=$!; PIDS+=($E2)
expect_exit $S 3 "the server of the session with a strange name"
wait $E1; wait $E2
EB=$(ls "$WORK"/evil/desync-150-*.bundle 2>/dev/null | head -1)
[ -n "$EB" ] || fail "no bundle of the session with a strange name"
"$R" view "$EB" -o "$WORK/evil.html" >/dev/null 2>"$WORK/evil-view.err" || fail "view failed"
view_page "$WORK/evil.html" evil
phone_fits "$WORK/evil.html" evil
grep -q '&lt;img src=x onerror=alert(1)&gt;' "$WORK/evil.dom" || fail "the player's name is not shown as text"
! grep -q '<img' "$WORK/evil.dom" || fail "the player's name became an element of the page"
# The state browser steps through the held ticks and parties: the odd player's state at the tick is
# what the page opens on, with the differing entity's fields beside the server's.
grep -q 'data-state-tick="150"' "$WORK/evil.dom" && grep -q '<table id="state-entities"' "$WORK/evil.dom" ||
  fail "the state browser did not open on the divergent tick"
page_commands "$WORK/evil.html"
# With the session's recording the timeline's reference covers the session, not only the bundle's window.
"$R" view "$EB" --session "$WORK/evil.replay" -o "$WORK/evil-session.html" >/dev/null 2>"$WORK/evil-view.err" || fail "view --session failed"
/usr/bin/python3 - "$WORK/evil-session.html" <<'PY' || fail "view --session did not cover the session"
import json, re, sys
d = json.loads(re.search(r'<script id="page-data" type="application/json">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
sys.exit(0 if d["reference_name"] == "reference (the session's replay)" and len(d["reference"]) >= 149 else 1)
PY
echo "ok: a name from the file is text on the page"

# 5. Damaged and foreign files: exit 2 and a sentence, never a crash.
BUNDLE=$(json_get "$WORK/synctest.json" '[c for c in d["checks"] if c["check"] == "replay"][0]["bundle"]')
head -c 300 "$BUNDLE" >"$WORK/cut.bundle"
"$R" --sim-lib "$BIN/libwalkers.so" view "$WORK/cut.bundle" -o "$WORK/cut.html" 2>"$WORK/cut.err"
[ $? = 2 ] && grep -q "truncated" "$WORK/cut.err" || fail "a truncated bundle was not refused with exit 2: $(cat "$WORK/cut.err")"
head -c 5000 /dev/urandom >"$WORK/noise.bin"
"$R" view "$WORK/noise.bin" -o "$WORK/noise.html" 2>"$WORK/noise.err"
[ $? = 2 ] || fail "random bytes were not refused with exit 2"
"$R" seek "$WORK/long.replay" 70000 2>"$WORK/far.err"
[ $? = 2 ] && grep -q "not one of them" "$WORK/far.err" || fail "a tick past the end was not refused with exit 2"
echo "PASS: bundles and pages from synctest, seek, verify --from, bisect, recorded keyframes, damaged files refused"
