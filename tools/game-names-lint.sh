#!/usr/bin/env bash
# Nothing above the simulation interface knows which game it runs: the session layer, the
# transport, the protocol, the replay format and the executables never name a built-in game
# (its name, its factory, its state, its constants or its bots). The games live in games/ and are
# reached only through the module registry (games/registry.cpp); the build keeps common/ from
# including them, this lint keeps their names out of its text too.
# Usage: tools/game-names-lint.sh [--self-test]
set -uo pipefail
cd "$(dirname "$0")/.."
PATTERN='arena|ArenaState|ArenaInput|kMaxBodies|bot_input|skirmish|Skirmish'
files() {
  # The engine below the API (which links the games to look them up by name), the executables, the formats.
  ls common/{core,net,session,app}/src/*.cpp common/{core,net,session,app}/src/*.hpp common/{core,net,session,app}/{include,internal}/lockstep/*.h* server/*.cpp client/*.cpp client/*.hpp \
     replay/*.cpp netsim/*.cpp schemas/messages.fbs schemas/replay.fbs ${LINT_EXTRA:-} 2>/dev/null
}
if [ "${1:-}" = --self-test ]; then
  tmp=$(mktemp --suffix=.cpp)
  trap 'rm -f "$tmp"' EXIT
  echo '#include "lockstep/arena.hpp"' >"$tmp"
  if LINT_EXTRA="$tmp" "$0" >/dev/null 2>&1; then echo "FAIL: the lint passed a file that includes arena.hpp"; exit 1; fi
  echo "ok: the lint flags a game's name above the simulation interface"
fi
hits=$(files | xargs grep -n -i -E "$PATTERN")
if [ -n "$hits" ]; then
  echo "lint: FAIL: a built-in game is named above the simulation interface:"
  echo "$hits"
  exit 1
fi
echo "PASS: no built-in game named in the session, transport, protocol, replay or executables ($(files | wc -l) files)"
