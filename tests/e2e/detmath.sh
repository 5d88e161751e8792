#!/usr/bin/env bash
# lockstep's math gives the same bits from C, Python (lockstep.detmath) and C# (Lockstep.DetMath,
# under Mono's default and under -O=float32, whose float arithmetic differs): each prints every
# function's result on the same 600 inputs (special values, random bit patterns, moderate values)
# and the three lists must be equal line for line. The C list is also checked against itself under
# glibc's baseline x86-64 paths (GLIBC_TUNABLES), where glibc's own sinf gives other bits.
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
walkers_games  # LIBDIR and LD_LIBRARY_PATH: the libraries, as the bindings find them
"$BIN/lockstep-detmath-vectors" >"$WORK/c.txt" || fail "the C program failed"
[ "$(wc -l <"$WORK/c.txt")" -eq 13194 ] || fail "the C program printed too little"
GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA "$BIN/lockstep-detmath-vectors" >"$WORK/c_baseline.txt"
cmp -s "$WORK/c.txt" "$WORK/c_baseline.txt" || fail "the results differ on glibc's baseline paths"
echo "ok: C: $(wc -l <"$WORK/c.txt") results, the same on glibc's baseline x86-64 paths"
py_with_lib "$HERE/../embed/detmath_vectors.py" >"$WORK/py.txt" || fail "the Python program failed"
cmp -s "$WORK/c.txt" "$WORK/py.txt" || { diff "$WORK/c.txt" "$WORK/py.txt" | head; fail "Python's bits differ from C's"; }
echo "ok: Python: the same bits as C"
if cs_ready; then
  cs_with_lib "$BIN/detmath_vectors.exe" >"$WORK/cs.txt" || fail "the C# program failed"
  cmp -s "$WORK/c.txt" "$WORK/cs.txt" || { diff "$WORK/c.txt" "$WORK/cs.txt" | head; fail "C#'s bits differ from C's"; }
  cs_with_lib -O=float32 "$BIN/detmath_vectors.exe" >"$WORK/cs32.txt" || fail "the C# program failed under -O=float32"
  cmp -s "$WORK/c.txt" "$WORK/cs32.txt" || { diff "$WORK/c.txt" "$WORK/cs32.txt" | head; fail "C#'s bits under -O=float32 differ from C's"; }
  echo "ok: C#: the same bits as C under Mono's default and -O=float32"
else
  echo "skip: C# (Mono or the C# build is not here, or the libraries carry AddressSanitizer)"
fi
echo "PASS"
