#!/usr/bin/env bash
# The determinism lint of lockstep's own games: their compiled objects pass lockstep-lint (no
# fused multiply-add, libm transcendental, unordered container, random or clock), and the
# simulation's sources name no unordered container. Usage: tools/determinism-lint.sh BUILD_DIR [OBJDUMP]
# With --self-test it first proves it can fail: an object built with FMA contraction is flagged.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --self-test ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  printf 'float f(float a,float b,float c){return a*b+c;}\nextern "C" float sinf(float);\nfloat g(float x){return sinf(x);}\n' >"$tmp/bad.cpp"
  g++ -O2 -mfma -ffp-contract=fast -c "$tmp/bad.cpp" -o "$tmp/bad.o"
  mkdir -p "$tmp/build/games/CMakeFiles/lockstep_games.dir/arena" && cp "$tmp/bad.o" "$tmp/build/games/CMakeFiles/lockstep_games.dir/arena/arena.cpp.o"
  out=$("$0" "$tmp/build" 2>&1) && { echo "FAIL: the lint passed an object with FMA and sinf"; exit 1; }
  grep -q 'libm: sinf in g' <<<"$out" && grep -q 'fma: vfmadd[0-9a-z]* in f' <<<"$out" \
    || { echo "FAIL: the lint did not name sinf and the FMA in their functions: $out"; exit 1; }
  echo "ok: the lint flags FMA and libm calls"
  shift
fi
BUILD=${1:?build dir}
OBJDUMP=${2:-objdump}
# The simulation: the games (their rules, bots and modules), the math, the PRNG, the shared scenario.
SIM_OBJS=(games/CMakeFiles/lockstep_games.dir/arena/arena.cpp.o games/CMakeFiles/lockstep_games.dir/arena/bot.cpp.o
          games/CMakeFiles/lockstep_games.dir/arena/module.cpp.o games/CMakeFiles/lockstep_games.dir/skirmish/rules.cpp.o
          games/CMakeFiles/lockstep_games.dir/skirmish/simulation.cpp.o games/CMakeFiles/lockstep_games.dir/skirmish/module.cpp.o
          common/CMakeFiles/lockstep_layer_core.dir/core/src/scenario.cpp.o common/CMakeFiles/lockstep_layer_core.dir/core/src/module.cpp.o)
SIM_SRCS=(games/arena/*.cpp games/arena/include/lockstep/*.hpp games/skirmish/*.cpp games/skirmish/*.hpp
          games/skirmish/include/lockstep/*.hpp common/core/src/scenario.cpp common/core/src/module.cpp
          common/core/internal/lockstep/detmath.hpp common/core/include/lockstep/rng.hpp common/core/include/lockstep/simulation.hpp)
fail=0
objs=()
for o in "${SIM_OBJS[@]}"; do
  obj="$BUILD/$o"
  [ -f "$obj" ] && objs+=("$obj") || { echo "lint: FAIL: $obj not found"; fail=1; }
done
if [ ${#objs[@]} -gt 0 ] && ! tools/lockstep-lint --objdump "$OBJDUMP" "${objs[@]}"; then
  echo "lint: FAIL: lockstep-lint's findings above"; fail=1
fi
unordered=$(grep -n 'unordered_' "${SIM_SRCS[@]}")
if [ -n "$unordered" ]; then echo "lint: FAIL: unordered container in the simulation:"; echo "$unordered"; fail=1; fi
# The skirmish's rules are integers only: no floating-point type (drawing and controls are elsewhere).
floats=$(grep -nEw 'float|double' games/skirmish/rules.hpp games/skirmish/rules.cpp)
if [ -n "$floats" ]; then echo "lint: FAIL: floating point in the skirmish's simulation:"; echo "$floats"; fail=1; fi
[ $fail = 0 ] && echo "PASS: no FMA, no libm transcendental, no unordered container in the simulation, no float in the skirmish's ($BUILD)"
exit $fail
