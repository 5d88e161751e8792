#!/usr/bin/env bash
# docs/GUIDE.md works as written: its code blocks are extracted (tools/guide-blocks.py) into an
# empty directory, built against this build installed into a temporary prefix, and its shell
# steps run there: the module's own ctest (lockstep-synctest), a synctest by hand, a hosted
# session of two bot clients with equal hash logs and a verified replay, a golden replay
# recorded and verified. Any step that stops working fails the test.
E2E_TIMEOUT=380  # it builds projects against an install: ctest allows 400 s
source "$(dirname "$0")/lib.sh" "$1"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX="$WORK/prefix"
cmake --install "$BIN/.." --prefix "$PREFIX" >"$WORK/install.log" 2>&1 || fail "cmake --install: $(tail -3 "$WORK/install.log")"
python3 "$SRC/tools/guide-blocks.py" "$SRC/docs/GUIDE.md" "$WORK/dots" || fail "the guide's code blocks could not be extracted"
(cd "$WORK/dots" && PATH="$PREFIX/bin:$PATH" CMAKE_PREFIX_PATH="$PREFIX" PORT="$PORT" bash guide-steps.sh) \
  >"$WORK/steps.log" 2>&1 || { tail -30 "$WORK/steps.log"; fail "a step of the guide failed"; }
json_check "$WORK/dots/build/synctest/dots-synctest.json" 'd["ok"] and d["sim"] == "dots" and len(d["checks"]) == 10' \
  "the guide's module did not pass every check"
json_check "$WORK/dots/build/dots-8p.json" 'd["ok"] and d["players"] == [8]' "the guide's 8-player synctest"
[ "$(wc -l <"$WORK/dots/build/server.hashes")" = 1000 ] || fail "the guide's session did not reach tick 1000"
[ "$(wc -l <"$WORK/dots/build/relay.hashes")" = 600 ] || fail "the guide's relay session did not settle 600 ticks"
for n in ann bob cat; do
  cmp "$WORK/dots/build/relay.hashes" "$WORK/dots/build/$n.relay.hashes" || fail "the guide's relay session: $n's hashes differ"
done
json_check "$WORK/dots/build/relay.json" 'd["relay"]["ticks_settled"] == 600' "the guide's relay server did not settle every tick"
grep -q '^OK 1000 ticks verified (dots seed=7,coins=6, 2 players)' "$WORK/steps.log" || fail "the guide's replay did not verify"
grep -q '^OK 1000 ticks verified (dots seed=42,coins=6, 4 players)' "$WORK/steps.log" || fail "the guide's golden replay did not verify"
echo "PASS: docs/GUIDE.md builds, passes lockstep-synctest, hosts a hash-equal session (and one on a relay server) and verifies its replays"
