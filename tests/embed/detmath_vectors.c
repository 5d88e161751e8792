/* lockstep's math from C: for each function, the bits of its result on a fixed list of inputs
 * (special values, then a linear congruential sequence of bit patterns and of moderate values).
 * tests/embed/detmath_vectors.py and .cs print the same list from Python and C#; e2e/detmath
 * compares the three, and again under Mono's -O=float32. One line: "name input result" in hex. */
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
  return 0;
}
