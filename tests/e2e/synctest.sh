#!/usr/bin/env bash
# lockstep-synctest on every built-in module and on a C module from a shared library: every check
# holds in every variant (exit 0, a JSON report, a JUnit file). C modules that break the contract
# on purpose each fail with exit 3 and a report naming their check and variant: a step that reads
# an address (replay equality across processes), a serialization that leaves state out (the round
# trip, at the tick it shows), desync fields that leave a value out (localization), a cache outside
# the state that assumes time only moves forward (rollback), a field left unwritten at creation and
# padding copied into the serialization (memory: entity and field, or the byte offset).
source "$(dirname "$0")/lib.sh" "$1"
ST="$BIN/lockstep-synctest"
for sim in arena skirmish; do
  world=bodies=50; [ $sim = skirmish ] && world=units=30,map=48
  "$ST" --sim $sim --world $world --ticks 200 --junit "$WORK/$sim.xml" >"$WORK/$sim.json" 2>"$WORK/$sim.err" \
    || fail "$sim: exit $? ($(tail -3 "$WORK/$sim.err"))"
  json_check "$WORK/$sim.json" 'd["ok"] and len(d["checks"]) == 10 and all(c["ok"] for c in d["checks"]) and d["players"] == [1, 2, 8] and len(d["variants"]) == 3' "$sim: a check failed"
  python3 -c 'import sys, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]).getroot(); sys.exit(not (t.get("tests") == "10" and t.get("failures") == "0"))' \
    "$WORK/$sim.xml" || fail "$sim: the JUnit file is not 10 passing cases"
done
"$ST" --sim-lib "$BIN/libwalkers.so" --ticks 200 >"$WORK/walkers.json" 2>"$WORK/walkers.err" || fail "walkers: $(tail -3 "$WORK/walkers.err")"
# No --world, no --players: the default and golden worlds, 1, 2 and 8 players, six seeds.
json_check "$WORK/walkers.json" 'd["ok"] and len(d["variants"]) == 6 and len({v["seed"] for v in d["variants"]}) == 6 and {v["settings"] for v in d["variants"]} == {"seed=1", "seed=5"}' "walkers: a check failed or variants missing"
# Broken modules: each fails its check, with exit 3.
expect_broken() {  # expect_broken N CHECK EXPR
  "$ST" --sim-lib "$BIN/libwalkers_broken$1.so" --ticks 200 --junit "$WORK/broken$1.xml" >"$WORK/broken$1.json" 2>"$WORK/broken$1.err"
  local rc=$?
  [ $rc = 3 ] || fail "broken module $1: exit $rc, expected 3 ($(tail -3 "$WORK/broken$1.err"))"
  json_check "$WORK/broken$1.json" "not d['ok'] and [c for c in d['checks'] if c['check'] == '$2' and not c['ok'] and ($3)]" \
    "broken module $1: the $2 check did not fail as expected: $(cat "$WORK/broken$1.json")"
  grep -q "<failure message=\"$2" "$WORK/broken$1.xml" || fail "broken module $1: no JUnit failure for $2"
  echo "ok: broken module $1 fails $2: $(python3 -c 'import json,sys; print([c["check"] for c in json.load(open(sys.argv[1]))["checks"] if not c["ok"]])' "$WORK/broken$1.json")"
}
expect_broken 1 replay 'c["tick"] >= 1'
expect_broken 2 roundtrip 'c["tick"] >= 1'
expect_broken 3 localization 'True'
expect_broken 4 rollback 'c["tick"] >= 1 and c["field"] != ""'
# Memory that was never written: the new worlds already differ, and the check says where.
expect_broken 6 memory 'c["tick"] == 0 and c["entity"] == 0 and c["field"] == "vel" and c["variant"].startswith("world=default players=1")'
expect_broken 7 memory 'c["field"] == "bytes outside the declared fields" and "byte offset 25" in c["detail"]'
# An order taken from addresses (a hash table keyed by pointers): the memory check's second run
# has every heap address moved (--heap-shift), so it is caught even where two processes get the
# same addresses (no ASLR: setarch -R here, a debugger, some containers); with ASLR the replay
# check may see it first.
NOASLR=(setarch "$(uname -m)" -R)
"${NOASLR[@]}" true 2>/dev/null || NOASLR=()
"${NOASLR[@]}" "$ST" --sim-lib "$BIN/libwalkers_broken8.so" --ticks 200 >"$WORK/broken8.json" 2>"$WORK/broken8.err"
rc=$?; [ $rc = 3 ] || fail "broken module 8: exit $rc, expected 3"
json_check "$WORK/broken8.json" '[c for c in d["checks"] if c["check"] in ("replay", "memory") and not c["ok"]]' \
  "broken module 8: neither replay nor memory caught the order taken from addresses"
echo "ok: broken module 8 (order by address) fails $(json_get "$WORK/broken8.json" '[c["check"] for c in d["checks"] if c["check"] in ("replay", "memory") and not c["ok"]][0]')${NOASLR:+ without ASLR}"
# Each fails exactly its own check.
json_check "$WORK/broken1.json" '[c["check"] for c in d["checks"] if not c["ok"]] == ["replay"]' "broken module 1 failed more than replay"
json_check "$WORK/broken2.json" '[c["check"] for c in d["checks"] if not c["ok"]] == ["history", "roundtrip"]' "broken module 2 (its serialization leaves a field out) failed other checks than history and roundtrip"
json_check "$WORK/broken3.json" '[c["check"] for c in d["checks"] if not c["ok"]] == ["localization"]' "broken module 3 failed more than localization"
json_check "$WORK/broken4.json" '[c["check"] for c in d["checks"] if not c["ok"]] == ["rollback"]' "broken module 4 failed more than rollback"
json_check "$WORK/broken6.json" '[c["check"] for c in d["checks"] if not c["ok"]] == ["memory"]' "broken module 6 failed more than memory"
json_check "$WORK/broken7.json" '[c["check"] for c in d["checks"] if not c["ok"]] == ["memory"]' "broken module 7 failed more than memory"
"$ST" --sim skirmish --world units=0 >/dev/null 2>"$WORK/usage.err"; [ $? = 2 ] || fail "bad settings should be bad usage"
echo "PASS: synctest holds for arena, skirmish and walkers and names the broken module's check"
