#!/usr/bin/env bash
# lockstep-lint on modules as a team ships them: a C++ library that calls libm's sin and atan2,
# contracts a multiply-add, iterates an unordered_map, calls rand() and reads a clock is named
# kind by kind with the function each is in (exit 3); --allow drops a kind; a clean module
# (walkers) passes (exit 0); the C module that calls sin is caught in its step; bad usage is 2.
# Then what a physics engine brings: aarch64 code (objects and libraries), a library the module
# needs (Debian's Box2D), a stripped library, a symbol or a function allowed by name (or only in one
# library, which must be among those read), FMA counted by function, and the JSON and JUnit
# reports that say what was allowed.
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

# aarch64: objdump puts a tab between the mnemonic and its operands there.
command -v aarch64-linux-gnu-gcc >/dev/null || fail "aarch64-linux-gnu-gcc is missing (./quickstart test installs it)"
printf '#include <math.h>\nfloat drift(float a, float b, float c) { return a * b + c; }\nfloat aim(float x) { return sinf(x); }\n' >"$WORK/arm.c"
aarch64-linux-gnu-gcc -O2 -ffp-contract=fast -fPIC -c "$WORK/arm.c" -o "$WORK/arm.o" || fail "cannot cross-build arm.o"
aarch64-linux-gnu-gcc -O2 -ffp-contract=fast -fPIC -shared "$WORK/arm.c" -o "$WORK/libarm.so" -lm || fail "cannot cross-build libarm.so"
for f in arm.o libarm.so; do
  "$LINT" "$WORK/$f" >"$WORK/arm.out" 2>&1; rc=$?
  [ $rc = 3 ] && grep -q "fma: fmadd in drift" "$WORK/arm.out" && grep -q "libm: sinf in aim" "$WORK/arm.out" ||
    fail "the aarch64 $f with fmadd and sinf (exit $rc): $(cat "$WORK/arm.out")"
done
echo "ok: aarch64 objects and libraries: fmadd and sinf named in their functions"

# A library the module needs is read too, and named in each finding.
cat >"$WORK/phys.cpp" <<'CPP'
#include <box2d/box2d.h>
extern "C" float fall() { b2World w(b2Vec2(0, -10)); w.Step(0.01f, 8, 3); return w.GetGravity().y; }
CPP
[ -f /usr/include/box2d/box2d.h ] || fail "libbox2d-dev is missing (./quickstart test installs it)"
g++ -O2 -fPIC -shared "$WORK/phys.cpp" -o "$WORK/libphys.so" -lbox2d || fail "cannot build the Box2D module"
"$LINT" --json "$WORK/phys.json" "$WORK/libphys.so" >"$WORK/phys.out" 2>"$WORK/phys.err"; rc=$?
[ $rc = 3 ] || fail "Box2D's libm and clock calls should fail the module (exit $rc): $(cat "$WORK/phys.out" "$WORK/phys.err")"
grep -q 'libbox2d.so[.0-9]* (needed by libphys.so): libm: sincosf in b2Body::SetTransform' "$WORK/phys.out" &&
  grep -q 'libbox2d.so[.0-9]* (needed by libphys.so): clock: gettimeofday in b2Timer' "$WORK/phys.out" ||
  fail "the findings in libbox2d are not named with the library and function: $(head -5 "$WORK/phys.out")"
grep -q 'libphys.so:' "$WORK/phys.out" && fail "the module itself has no finding: $(grep 'libphys.so:' "$WORK/phys.out")"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert not j["ok"] and len(j["files"]) == 2 and all("libbox2d" in f["file"] for f in j["findings"]), j' \
  "$WORK/phys.json" || fail "the JSON report of the Box2D module"
"$LINT" --no-follow "$WORK/libphys.so" >/dev/null 2>&1 || fail "--no-follow should read the module alone"
echo "ok: the Box2D module: $(wc -l <"$WORK/phys.out") findings in libbox2d, each naming the library"

# Allowing by name: a symbol, and a function; the report says what was let through and why.
"$LINT" --allow-symbol sinf --allow-function drift --json "$WORK/arm.json" --junit "$WORK/arm.xml" "$WORK/libarm.so" \
  >"$WORK/allow.out" 2>&1 || fail "sinf and drift allowed by name should pass: $(cat "$WORK/allow.out")"
grep -q 'allowed by --allow-symbol sinf: libm: sinf in aim' "$WORK/allow.out" &&
  grep -q 'allowed by --allow-function drift: fma: fmadd in drift' "$WORK/allow.out" || fail "what was allowed: $(cat "$WORK/allow.out")"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ok"] and not j["findings"] and sorted(a["by"] for a in j["allowed"]) == ["--allow-function drift", "--allow-symbol sinf"], j' \
  "$WORK/arm.json" || fail "the JSON report of what was allowed"
grep -q 'failures="0"' "$WORK/arm.xml" && grep -q 'allowed by --allow-symbol sinf' "$WORK/arm.xml" || fail "the JUnit report: $(cat "$WORK/arm.xml")"
"$LINT" --allow-symbol sinf "$WORK/libarm.so" >/dev/null 2>&1; [ $? = 3 ] || fail "allowing sinf alone must leave the fmadd"
echo "ok: a symbol and a function allowed by name, and said so in the text, JSON and JUnit reports"

# Allowances scoped to a library: sinf allowed in libbox2d is not allowed in the game's own code.
cat >"$WORK/own.cpp" <<'CPP'
#include <box2d/box2d.h>
#include <cmath>
extern "C" float turn(float a) { b2World w(b2Vec2(0, -10)); w.Step(0.01f, 8, 3); return std::sin(a) + w.GetGravity().y; }
CPP
g++ -O2 -fPIC -shared "$WORK/own.cpp" -o "$WORK/libown.so" -lbox2d || fail "cannot build the module with its own sinf"
box2d_allows=(--allow-symbol libbox2d:sinf --allow-symbol libbox2d:cosf --allow-symbol libbox2d.so.2:sincosf
              --allow-function 'libbox2d:b2Rope::*' --allow-function 'libbox2d:b2Timer::*')
"$LINT" "${box2d_allows[@]}" "$WORK/libphys.so" >"$WORK/scoped.out" 2>&1 || fail "Box2D's calls allowed in libbox2d: $(cat "$WORK/scoped.out")"
grep -q 'allowed by --allow-symbol libbox2d:sinf: libm: sinf in b2World::SolveTOI' "$WORK/scoped.out" ||
  fail "the scoped allowance is not named: $(grep allowed "$WORK/scoped.out" | head -3)"
"$LINT" "${box2d_allows[@]}" "$WORK/libown.so" >"$WORK/own.out" 2>&1; rc=$?
[ $rc = 3 ] && grep -q 'libown.so: libm: sinf in turn' "$WORK/own.out" ||
  fail "the game's own sinf must not pass under an allowance for libbox2d (exit $rc): $(grep -v allowed "$WORK/own.out")"
"$LINT" --allow-symbol libbox2d-typo:sinf "$WORK/libphys.so" >/dev/null 2>"$WORK/typo.err"; rc=$?
[ $rc = 2 ] && grep -q 'names the library libbox2d-typo, which is none of the files read' "$WORK/typo.err" ||
  fail "an allowance for a library not read must be an error (exit $rc): $(cat "$WORK/typo.err")"
"$LINT" --allow-symbol cbrtf "$WORK/libarm.so" >/dev/null 2>"$WORK/unused.err"
grep -q 'note: --allow-symbol cbrtf let nothing through' "$WORK/unused.err" || fail "an unused allowance is not named: $(cat "$WORK/unused.err")"
echo "ok: allowances scoped to a library; the game's own sinf still fails; a library not read is an error, an unused allowance named"

# FMA findings summarized by function with counts before the detail.
printf 'float a(float x, float y, float z) { return x * y + z; }
float b(float x, float y) { return x * y + x * x + y * y; }
' >"$WORK/fma.c"
aarch64-linux-gnu-gcc -O2 -ffp-contract=fast -fPIC -shared "$WORK/fma.c" -o "$WORK/libfma.so" || fail "cannot cross-build libfma.so"
"$LINT" "$WORK/libfma.so" >"$WORK/fma.out" 2>&1
head -1 "$WORK/fma.out" | grep -Eq '^lockstep-lint: [0-9]+ FMA instructions, by function:$' &&
  grep -Eq '^ +2  b in ' "$WORK/fma.out" && grep -Eq '^ +1  a in ' "$WORK/fma.out" ||
  fail "the FMA summary: $(cat "$WORK/fma.out")"
echo "ok: FMA instructions summarized by function, with counts, first"

# A stripped library: a static function's finding is in an unknown function, not its neighbour's.
printf 'static __attribute__((noinline)) float spin(float x) { return __builtin_sinf(x) * x; }\nfloat first(float x) { return x + 1; }\nfloat second(float x) { return spin(x) + 1; }\n' >"$WORK/strip.c"
gcc -O2 -fPIC -shared -fno-builtin "$WORK/strip.c" -o "$WORK/libstrip.so" -lm && strip "$WORK/libstrip.so" || fail "cannot build the stripped library"
"$LINT" "$WORK/libstrip.so" >"$WORK/strip.out" 2>/dev/null
grep -q 'libm: sinf in an unknown function' "$WORK/strip.out" || fail "a stripped static function: $(cat "$WORK/strip.out")"
echo "ok: a stripped library's static function is named unknown"

# Untrusted files: truncated, foreign, or a library whose needed library is nowhere: a sentence.
head -c 3000 "$WORK/libphys.so" >"$WORK/trunc.so"
"$LINT" "$WORK/trunc.so" >/dev/null 2>"$WORK/trunc.err"; [ $? = 2 ] && grep -q 'trunc.so' "$WORK/trunc.err" || fail "a truncated library should be exit 2 with its name"
printf 'int use(void);\nint call(void) { return use(); }\n' >"$WORK/needs.c"; printf 'int use(void) { return 1; }\n' >"$WORK/gone.c"
gcc -fPIC -shared "$WORK/gone.c" -o "$WORK/libgone.so" && gcc -fPIC -shared "$WORK/needs.c" -o "$WORK/libneeds.so" -L"$WORK" -lgone && rm "$WORK/libgone.so"
"$LINT" "$WORK/libneeds.so" >"$WORK/needs.out" 2>/dev/null; [ $? = 3 ] && grep -q 'unlinted: libgone.so' "$WORK/needs.out" || fail "a needed library not found: $(cat "$WORK/needs.out")"
"$LINT" --allow unlinted "$WORK/libneeds.so" >/dev/null 2>&1 || fail "--allow unlinted should pass"
echo "ok: untrusted and incomplete inputs are refused or reported with a sentence"
echo "PASS: lockstep-lint names libm, FMA, unordered, random and clock findings with their functions"
