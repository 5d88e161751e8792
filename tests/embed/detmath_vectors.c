/* lockstep's math from C: for each function, the bits of its result on a fixed list of inputs
 * (special values, then a linear congruential sequence of bit patterns and of moderate values).
 * tests/embed/detmath_vectors.py and .cs print the same list from Python and C#; e2e/detmath
 * compares the three, and again under Mono's -O=float32. One line: "name input result" in hex.
 * Then the same for the binary64 functions (lockstep_sin, ...) on 600 doubles, each name with
 * "64" after it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lockstep/detmath.h"

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

typedef float (*fn1)(float);
typedef float (*fn2)(float, float);
typedef double (*dfn1)(double);
typedef double (*dfn2)(double, double);

static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
static double from_dbits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

static void binary64(void) {
  const char* names1[] = {"sin", "cos", "tan", "asin", "acos", "atan", "exp", "exp2", "log", "log2", "sqrt", "floor", "ceil", "round", "trunc"};
  const dfn1 ones[] = {lockstep_sin, lockstep_cos, lockstep_tan, lockstep_asin, lockstep_acos, lockstep_atan, lockstep_exp, lockstep_exp2,
                       lockstep_log, lockstep_log2, lockstep_sqrt, lockstep_floor, lockstep_ceil, lockstep_round, lockstep_trunc};
  const char* names2[] = {"atan2", "pow", "hypot", "fmod", "fmin", "fmax"};
  const dfn2 twos[] = {lockstep_atan2, lockstep_pow, lockstep_hypot, lockstep_fmod, lockstep_fmin, lockstep_fmax};
  uint64_t inputs[600];
  const uint64_t specials[] = {0x0000000000000000u, 0x8000000000000000u, 0x3ff0000000000000u, 0xbff0000000000000u,
                               0x7ff0000000000000u, 0xfff0000000000000u, 0x0000000000000001u, 0x7fefffffffffffffu,
                               0x400921fb54442d18u, 0x3ff921fb54442d18u, 0x3fe0000000000000u, 0x40862e42fefa39efu,
                               0xc0874910d52d3051u};
  unsigned n = 0, i, f;
  uint64_t x = 12345u;
  for (i = 0; i < sizeof specials / sizeof specials[0]; ++i) inputs[n++] = specials[i];
  while (n < 300) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    inputs[n++] = x;
  }
  while (n < 600) { /* moderate values: (k - 500000) / 1000 */
    x = x * 6364136223846793005u + 1442695040888963407u;
    inputs[n++] = dbits((double)((int64_t)((x >> 11) % 1000000u) - 500000) / 1000.0);
  }
  for (f = 0; f < sizeof ones / sizeof ones[0]; ++f)
    for (i = 0; i < n; ++i) printf("%s64 %016llx %016llx\n", names1[f], (unsigned long long)inputs[i], (unsigned long long)dbits(ones[f](from_dbits(inputs[i]))));
  for (f = 0; f < sizeof twos / sizeof twos[0]; ++f)
    for (i = 0; i + 1 < n; ++i)
      printf("%s64 %016llx %016llx %016llx\n", names2[f], (unsigned long long)inputs[i], (unsigned long long)inputs[i + 1],
             (unsigned long long)dbits(twos[f](from_dbits(inputs[i]), from_dbits(inputs[i + 1]))));
  for (i = 0; i < n; ++i) {
    double s, c;
    lockstep_sincos(from_dbits(inputs[i]), &s, &c);
    printf("sincos64 %016llx %016llx %016llx\n", (unsigned long long)inputs[i], (unsigned long long)dbits(s), (unsigned long long)dbits(c));
  }
}

int main(void) {
  const char* names1[] = {"sin", "cos", "tan", "asin", "acos", "atan", "exp", "exp2", "log", "log2", "sqrt", "floor", "ceil", "round", "trunc"};
  const fn1 ones[] = {lockstep_sinf, lockstep_cosf, lockstep_tanf, lockstep_asinf, lockstep_acosf, lockstep_atanf, lockstep_expf, lockstep_exp2f,
                      lockstep_logf, lockstep_log2f, lockstep_sqrtf, lockstep_floorf, lockstep_ceilf, lockstep_roundf, lockstep_truncf};
  const char* names2[] = {"atan2", "pow", "hypot", "fmod", "fmin", "fmax"};
  const fn2 twos[] = {lockstep_atan2f, lockstep_powf, lockstep_hypotf, lockstep_fmodf, lockstep_fminf, lockstep_fmaxf};
  uint32_t inputs[600];
  const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u, 0x00000001u,
                               0x7f7fffffu, 0x40490fdbu, 0x3fc90fdbu, 0x3f000000u, 0x42b17218u, 0xc2cff1b5u};
  unsigned n = 0, i, f;
  uint32_t x = 12345u;
  for (i = 0; i < sizeof specials / sizeof specials[0]; ++i) inputs[n++] = specials[i];
  while (n < 300) {
    x = x * 1664525u + 1013904223u;
    inputs[n++] = x;
  }
  while (n < 600) {  /* moderate values: (k - 500000) / 1000 */
    x = x * 1664525u + 1013904223u;
    inputs[n++] = bits((float)((int32_t)(x % 1000000u) - 500000) / 1000.0f);
  }
  for (f = 0; f < sizeof ones / sizeof ones[0]; ++f)
    for (i = 0; i < n; ++i) printf("%s %08x %08x\n", names1[f], inputs[i], bits(ones[f](from_bits(inputs[i]))));
  for (f = 0; f < sizeof twos / sizeof twos[0]; ++f)
    for (i = 0; i + 1 < n; ++i)
      printf("%s %08x %08x %08x\n", names2[f], inputs[i], inputs[i + 1], bits(twos[f](from_bits(inputs[i]), from_bits(inputs[i + 1]))));
  for (i = 0; i < n; ++i) {
    float s, c;
    lockstep_sincosf(from_bits(inputs[i]), &s, &c);
    printf("sincos %08x %08x %08x\n", inputs[i], bits(s), bits(c));
  }
  binary64();
  return 0;
}
