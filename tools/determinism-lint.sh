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
  mkdir -p "$tmp/build/common/CMakeFiles/lockstep_core_objects.dir/src" && cp "$tmp/bad.o" "$tmp/build/common/CMakeFiles/lockstep_core_objects.dir/src/arena.cpp.o"
  out=$("$0" "$tmp/build" 2>&1) && { echo "FAIL: the lint passed an object with FMA and sinf"; exit 1; }
  grep -q 'libm: sinf in g' <<<"$out" && grep -q 'fma: vfmadd[0-9a-z]* in f' <<<"$out" \
    || { echo "FAIL: the lint did not name sinf and the FMA in their functions: $out"; exit 1; }
  echo "ok: the lint flags FMA and libm calls"
  shift
fi
BUILD=${1:?build dir}
OBJDUMP=${2:-objdump}
# The simulation: the world, its math, its PRNG, the bots and the shared scenario.
SIM_OBJS=(arena skirmish bot scenario module)
SIM_SRCS=(common/src/arena.cpp common/src/skirmish.cpp common/include/lockstep/skirmish.hpp common/src/bot.cpp common/src/scenario.cpp common/src/module.cpp common/include/lockstep/arena.hpp
          common/include/lockstep/detmath.hpp common/include/lockstep/rng.hpp common/include/lockstep/simulation.hpp)
fail=0
objs=()
for o in "${SIM_OBJS[@]}"; do
  obj="$BUILD/common/CMakeFiles/lockstep_core_objects.dir/src/$o.cpp.o"
  [ -f "$obj" ] && objs+=("$obj") || { echo "lint: FAIL: $obj not found"; fail=1; }
done
if [ ${#objs[@]} -gt 0 ] && ! tools/lockstep-lint --objdump "$OBJDUMP" "${objs[@]}"; then
  echo "lint: FAIL: lockstep-lint's findings above"; fail=1
fi
unordered=$(grep -n 'unordered_' "${SIM_SRCS[@]}")
if [ -n "$unordered" ]; then echo "lint: FAIL: unordered container in the simulation:"; echo "$unordered"; fail=1; fi
# The skirmish is integers only: no floating-point type before its drawing code.
floats=$(sed -n '1,/---- the Simulation ----/p' common/src/skirmish.cpp | grep -nEw 'float|double')
if [ -n "$floats" ]; then echo "lint: FAIL: floating point in the skirmish's simulation:"; echo "$floats"; fail=1; fi
[ $fail = 0 ] && echo "PASS: no FMA, no libm transcendental, no unordered container in the simulation, no float in the skirmish's ($BUILD)"
exit $fail
