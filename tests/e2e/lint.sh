#!/usr/bin/env bash
# lockstep-lint on modules as a team ships them: a C++ library that calls libm's sin and atan2,
# contracts a multiply-add, iterates an unordered_map, calls rand() and reads a clock is named
# kind by kind with the function each is in (exit 3); --allow drops a kind; a clean module
# (walkers) passes (exit 0); the C module that calls sin is caught in its step; bad usage is 2.
source "$(dirname "$0")/lib.sh" "$1"
LINT="$BIN/lockstep-lint"
[ -x "$LINT" ] || fail "$LINT is missing"
cat >"$WORK/bad.cpp" <<'CPP'
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <unordered_map>
struct Tanks { std::unordered_map<int, int> hp; };
extern "C" double aim(double x, double y) { return std::sin(x) + std::atan2(y, x); }
extern "C" float drift(float a, float b, float c) { return a * b + c; }
extern "C" int spread() { return rand(); }
extern "C" long stamp() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
extern "C" int total(Tanks* t, int k) { t->hp[k] = 1; int s = 0; for (auto& [id, hp] : t->hp) s += id * hp; return s; }
CPP
g++ -O2 -mfma -ffp-contract=fast -fPIC -shared "$WORK/bad.cpp" -o "$WORK/libbad.so" || fail "cannot build the bad module"
"$LINT" "$WORK/libbad.so" >"$WORK/bad.out" 2>"$WORK/bad.err"
[ $? = 3 ] || fail "the bad module should fail the lint with exit 3: $(cat "$WORK/bad.out" "$WORK/bad.err")"
for want in 'libm: sin in aim' 'libm: atan2 in aim' 'fma: vfmadd[0-9a-z]* in drift' 'random: rand in spread' \
            'clock: std::chrono::.*steady_clock::now() in stamp' 'unordered: .* in total'; do
  grep -q "$want" "$WORK/bad.out" || fail "no finding '$want': $(cat "$WORK/bad.out")"
done
echo "ok: $(wc -l <"$WORK/bad.out") findings in the bad module, each with its function"
"$LINT" --allow libm --allow fma --allow unordered --allow random --allow clock "$WORK/libbad.so" >"$WORK/allowed.out" 2>&1 \
  || fail "every kind allowed should pass: $(cat "$WORK/allowed.out")"
"$LINT" "$BIN/libwalkers.so" >"$WORK/walkers.out" 2>&1 || fail "walkers should pass the lint: $(cat "$WORK/walkers.out")"
"$LINT" "$BIN/libwalkers_broken5.so" >"$WORK/broken5.out" 2>/dev/null
[ $? = 3 ] && grep -q 'libm: sin in step' "$WORK/broken5.out" || fail "the module calling sin in its step: $(cat "$WORK/broken5.out")"
"$LINT" >/dev/null 2>&1; [ $? = 2 ] || fail "no file should be bad usage"
"$LINT" "$WORK/none.so" >/dev/null 2>&1; [ $? = 2 ] || fail "a missing file should be bad usage"
echo "not an object" >"$WORK/text.so"
"$LINT" "$WORK/text.so" >/dev/null 2>&1; [ $? = 2 ] || fail "a file that is not an object should be bad usage"
echo "PASS: lockstep-lint names libm, FMA, unordered, random and clock findings with their functions"
