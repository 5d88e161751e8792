#!/usr/bin/env bash
# The determinism gate's runtime legs (tools/determinism-matrix.sh --mono-check, --python-check): a
# game whose rules run in C# or Python brings its own check (here: compare with the C game's trace,
# Lockstep.Client.CompareTrace and lockstep.compare_trace), and the gate runs it under Mono with its
# float32 optimization on (Debian 12's default) and off (-O=-float32: float intermediates kept in
# double precision), and under CPython. The ports as written pass every leg. The C# port with a
# float rule written without the casts docs/EMBEDDING.md asks for (cs_player.exe --float-rule) is
# caught: mono passes, mono-O=-float32 fails at tick 1, entity 0, field vel, in the JSON and JUnit
# reports, and the gate exits 1.
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
walkers_games
MATRIX="$HERE/../../tools/determinism-matrix.sh"
"$BIN/lockstep-c-player" --trace-write "$WORK/walkers.trace" >"$WORK/trace.out" 2>&1 || fail "the C game's trace: $(cat "$WORK/trace.out")"
cat >"$WORK/py_check.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
import lockstep
from py_player import WalkersGame
ok, report = lockstep.compare_trace(WalkersGame(int(sys.argv[2], 16), 0, 0), sys.argv[1])
print("py_check:", report)
sys.exit(0 if ok else 3)
PY
export PYTHONPATH="$HERE/../../bindings/python" LOCKSTEP_LIBDIR="$LIBDIR"
checks=(--python-check "$WORK/py_check.py $WORK/walkers.trace $BID $HERE/../embed")
cs_ready || echo "note: Mono or the C# game is not here: the gate must report its legs skipped"
"$MATRIX" --root "$WORK/gate" --only python3 --only mono --only mono-O=-float32 "${checks[@]}" \
    --mono-check "$BIN/cs_player.exe --compare-trace $WORK/walkers.trace $BID" --json "$WORK/ok.json" >"$WORK/ok.out" 2>&1 ||
  fail "the ports as written: $(tail -5 "$WORK/ok.out")"
if cs_ready; then
  json_check "$WORK/ok.json" 'd["ok"] and sorted(l["leg"] for l in d["legs"] if l["status"] == "ok") == ["mono", "mono-O=-float32", "python3"]' \
    "every runtime leg must pass for the ports as written"
  echo "ok: the C# port under mono and mono -O=-float32, the Python port under python3: equal to the C game's trace"
  rc=0
  "$MATRIX" --root "$WORK/gate" --only mono --only mono-O=-float32 \
      --mono-check "$BIN/cs_player.exe --compare-trace $WORK/walkers.trace $BID --float-rule" \
      --json "$WORK/float.json" --junit "$WORK/float.xml" >"$WORK/float.out" 2>&1 || rc=$?
  [ $rc = 1 ] || fail "the float rule must fail the gate (exit 1), got $rc: $(tail -5 "$WORK/float.out")"
  json_check "$WORK/float.json" '[(l["leg"], l["status"]) for l in d["legs"]] == [("mono", "ok"), ("mono-O=-float32", "fail")] and "tick 1: entity 0 field vel" in d["legs"][1]["detail"]' \
    "the float rule must pass under float32 and fail, named, without it"
  grep -q '<testcase classname="mono-O=-float32".*<failure message=".*tick 1: entity 0 field vel' "$WORK/float.xml" ||
    fail "the JUnit report does not name the failing leg: $(cat "$WORK/float.xml")"
  echo "ok: the float rule: mono passes, mono-O=-float32 fails: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["legs"][1]["detail"])' "$WORK/float.json")"
else
  json_check "$WORK/ok.json" '[l["status"] for l in d["legs"] if l["leg"].startswith("mono")] in ([], ["skipped", "skipped"])' \
    "missing Mono legs must be reported skipped"
fi
echo "PASS"
