#!/usr/bin/env bash
# lockstep's math, binary32 and binary64, gives the same bits from C, Python (lockstep.detmath and
# lockstep.detmath64) and C# (Lockstep.DetMath,
# under Mono's default (Debian's Mono 6.8 has its float32 optimization on: float arithmetic in
# single precision) and under -O=-float32 (float intermediates kept in double precision, as older
# Monos and other runtimes do), whose float arithmetic differs): each prints every
# function's result on the same 600 inputs (special values, random bit patterns, moderate values)
# and the three lists must be equal line for line. The C list is also checked against itself under
# glibc's baseline x86-64 paths (GLIBC_TUNABLES), where glibc's own sinf gives other bits, and
# against the same program built with clang -O3 -march=native, for aarch64 (under qemu) and for
# wasm (under Node): a leg whose toolchain is missing is skipped, saying so.
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
walkers_games  # LIBDIR and LD_LIBRARY_PATH: the libraries, as the bindings find them
"$BIN/lockstep-detmath-vectors" >"$WORK/c.txt" || fail "the C program failed"
[ "$(wc -l <"$WORK/c.txt")" -eq 26388 ] || fail "the C program printed too little"
GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA "$BIN/lockstep-detmath-vectors" >"$WORK/c_baseline.txt"
cmp -s "$WORK/c.txt" "$WORK/c_baseline.txt" || fail "the results differ on glibc's baseline paths"
echo "ok: C: $(wc -l <"$WORK/c.txt") results, the same on glibc's baseline x86-64 paths"
py_with_lib "$HERE/../embed/detmath_vectors.py" >"$WORK/py.txt" || fail "the Python program failed"
cmp -s "$WORK/c.txt" "$WORK/py.txt" || { diff "$WORK/c.txt" "$WORK/py.txt" | head; fail "Python's bits differ from C's"; }
echo "ok: Python: the same bits as C"
if cs_ready; then
  cs_with_lib "$BIN/detmath_vectors.exe" >"$WORK/cs.txt" || fail "the C# program failed"
  cmp -s "$WORK/c.txt" "$WORK/cs.txt" || { diff "$WORK/c.txt" "$WORK/cs.txt" | head; fail "C#'s bits differ from C's"; }
  cs_with_lib -O=-float32 "$BIN/detmath_vectors.exe" >"$WORK/cs32.txt" || fail "the C# program failed under -O=-float32"
  cmp -s "$WORK/c.txt" "$WORK/cs32.txt" || { diff "$WORK/c.txt" "$WORK/cs32.txt" | head; fail "C#'s bits under -O=-float32 differ from C's"; }
  echo "ok: C#: the same bits as C under Mono's default (float32) and -O=-float32 (double intermediates)"
else
  echo "skip: C# (Mono or the C# build is not here, or the libraries carry AddressSanitizer)"
fi
# The same C program and library built elsewhere: clang -O3 -march=native (FMA on this CPU, but
# the library's flags forbid contraction), gcc for aarch64 under qemu (gcc contracts by default
# there), and emscripten's wasm under Node (another libm in the browser).
SRC="$HERE/../../common/core"
build_other() {  # build_other NAME CC CXX FLAGS...: the vectors program from source, into $WORK/NAME
  local name=$1 cc=$2 cxx=$3; shift 3
  "$cxx" "$@" -std=c++20 -ffp-contract=off -fno-math-errno -I"$SRC/include" -c "$SRC/src/detmath.cpp" -o "$WORK/$name-detmath.o" &&
    "$cxx" "$@" -std=c++20 -ffp-contract=off -fno-math-errno -I"$SRC/include" -c "$SRC/src/detmath_exact.cpp" -o "$WORK/$name-exact.o" &&
    "$cxx" "$@" -std=c++20 -ffp-contract=off -fno-math-errno -I"$SRC/include" -c "$SRC/src/detmath64.cpp" -o "$WORK/$name-detmath64.o" &&
    "$cxx" "$@" -std=c++20 -ffp-contract=off -fno-math-errno -I"$SRC/include" -c "$SRC/src/detmath64_trig.cpp" -o "$WORK/$name-trig.o" &&
    "$cc" "$@" -ffp-contract=off -I"$SRC/include" -c "$HERE/../embed/detmath_vectors.c" -o "$WORK/$name-vectors.o" &&
    "$cxx" "$@" ${LINK_FLAGS:-} "$WORK/$name-vectors.o" "$WORK/$name-detmath.o" "$WORK/$name-exact.o" "$WORK/$name-detmath64.o" "$WORK/$name-trig.o" -o "$WORK/$name"
}
if command -v clang++ >/dev/null; then
  build_other native clang clang++ -O3 -march=native || fail "the clang -O3 -march=native build failed"
  "$WORK/native" >"$WORK/native.txt" && cmp -s "$WORK/c.txt" "$WORK/native.txt" || fail "clang -O3 -march=native gives other bits"
  echo "ok: clang -O3 -march=native: the same bits"
else
  echo "skip: clang -O3 -march=native (clang is not installed)"
fi
if command -v aarch64-linux-gnu-g++ >/dev/null && command -v qemu-aarch64 >/dev/null; then
  build_other arm aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ -O2 -static || fail "the aarch64 build failed"
  qemu-aarch64 "$WORK/arm" >"$WORK/arm.txt" && cmp -s "$WORK/c.txt" "$WORK/arm.txt" || fail "aarch64 gives other bits"
  echo "ok: aarch64 (gcc -O2, under qemu): the same bits"
else
  echo "skip: aarch64 (g++-aarch64-linux-gnu or qemu-user is not installed)"
fi
if command -v emcc >/dev/null && command -v node >/dev/null; then
  export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs  # emscripten runs Debian's acorn (tools/build-web.sh)
  # One file, the wasm inside: Node's fetch() does not take a file path, which this emscripten's
  # loader would give it.
  LINK_FLAGS=-sSINGLE_FILE=1 build_other wasm.js emcc em++ -O2 2>"$WORK/emcc.err" || { tail -5 "$WORK/emcc.err"; fail "the wasm build failed"; }
  node "$WORK/wasm.js" >"$WORK/wasm.txt" && cmp -s "$WORK/c.txt" "$WORK/wasm.txt" || fail "wasm under Node gives other bits"
  echo "ok: wasm (emscripten -O2, under Node): the same bits"
else
  echo "skip: wasm (emscripten or nodejs is not installed)"
fi
echo "PASS"
