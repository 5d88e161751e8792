/* lockstep's math for simulations: the same bits on every machine, compiler and language.
 *
 * libm's functions differ by library, version and even CPU (glibc picks its sinf by whether the
 * CPU has AVX2 and FMA), so a simulation that calls them can disagree between two honest players.
 * These do not: each is computed with IEEE-754 binary64 additions, multiplications, divisions and
 * square roots only (exactly rounded everywhere), integer arithmetic and tables compiled in, with
 * no FMA contraction, no x87 and no choice by CPU; the library is compiled with
 * -ffp-contract=off whatever the game's own flags are.
 *
 * binary32 (float) functions are correctly rounded: the result is the float nearest to the exact
 * value (ties to even), so they agree with any other correctly rounded library (CORE-MATH, glibc
 * 2.41's new float functions, MPFR rounded to binary32) and not only with themselves.
 *   - sin cos sincos tan asin acos atan exp exp2 log log2: correctly rounded over the whole domain,
 *     checked against MPFR for every one of the 2^32 inputs (lockstep-detmath-check --exhaustive,
 *     its figures in docs/DETMATH.md), with a sampled check and the hard cases in the test suite.
 *   - atan2 pow: correctly rounded; where the binary64 evaluation falls within 2^-49 of a rounding
 *     boundary (about one pair in 2^22) a double-double one decides, and for pow's exact powers
 *     halfway between two floats, the exact power (checked against MPFR on samples and on every
 *     such pair found among billions: docs/DETMATH.md).
 *   - hypot sqrt fmod floor ceil round trunc fmin fmax: correctly rounded or exact by construction.
 *
 * binary64 (double) functions, the same names without the f (lockstep_sin, lockstep_pow, ...), are
 * evaluated in double-double arithmetic: identical everywhere, and within 1 ulp of the exact value
 * (about 0.5 + 2^-3 ulp at worst; nearly always the correctly rounded double), measured against
 * MPFR on a large random sample and the known hard cases (tools/detmath_check.cpp --binary64,
 * docs/DETMATH.md). sqrt fmod floor ceil round trunc fmin fmax are exact, as in binary32.
 * Special values follow C99 Annex F, and every NaN result is the one quiet NaN 0x7fc00000
 * (0x7ff8000000000000 in binary64), whatever the input NaN's sign and payload (CPUs make different
 * NaNs, and a NaN's bits are hashed as any float's): sin(+-0) = +-0, log(0) = -inf,
 * log(x < 0) = NaN, exp(-inf) = +0, huge arguments of sin/cos/tan are reduced exactly (no range
 * limit), pow(x, +-0) = 1 for every x, hypot(+-inf, NaN) = +inf. fmin/fmax return the number when
 * one argument is NaN, and order -0 below +0. round() rounds half away from zero.
 */
#ifndef LOCKSTEP_DETMATH_H
#define LOCKSTEP_DETMATH_H

#include "lockstep/export.h"

#ifdef __cplusplus
extern "C" {
#endif

LOCKSTEP_API float lockstep_sinf(float x);
LOCKSTEP_API float lockstep_cosf(float x);
LOCKSTEP_API void lockstep_sincosf(float x, float* sin_out, float* cos_out);
LOCKSTEP_API float lockstep_tanf(float x);
LOCKSTEP_API float lockstep_asinf(float x);
LOCKSTEP_API float lockstep_acosf(float x);
LOCKSTEP_API float lockstep_atanf(float x);
LOCKSTEP_API float lockstep_atan2f(float y, float x);
LOCKSTEP_API float lockstep_expf(float x);
LOCKSTEP_API float lockstep_exp2f(float x);
LOCKSTEP_API float lockstep_logf(float x);
LOCKSTEP_API float lockstep_log2f(float x);
LOCKSTEP_API float lockstep_powf(float x, float y);
LOCKSTEP_API float lockstep_hypotf(float x, float y);
LOCKSTEP_API float lockstep_sqrtf(float x);
LOCKSTEP_API float lockstep_fmodf(float x, float y);
LOCKSTEP_API float lockstep_floorf(float x);
LOCKSTEP_API float lockstep_ceilf(float x);
LOCKSTEP_API float lockstep_roundf(float x);
LOCKSTEP_API float lockstep_truncf(float x);
LOCKSTEP_API float lockstep_fminf(float x, float y);
LOCKSTEP_API float lockstep_fmaxf(float x, float y);

LOCKSTEP_API double lockstep_sin(double x);
LOCKSTEP_API double lockstep_cos(double x);
LOCKSTEP_API void lockstep_sincos(double x, double* sin_out, double* cos_out);
LOCKSTEP_API double lockstep_tan(double x);
LOCKSTEP_API double lockstep_asin(double x);
LOCKSTEP_API double lockstep_acos(double x);
LOCKSTEP_API double lockstep_atan(double x);
LOCKSTEP_API double lockstep_atan2(double y, double x);
LOCKSTEP_API double lockstep_exp(double x);
LOCKSTEP_API double lockstep_exp2(double x);
LOCKSTEP_API double lockstep_log(double x);
LOCKSTEP_API double lockstep_log2(double x);
LOCKSTEP_API double lockstep_pow(double x, double y);
LOCKSTEP_API double lockstep_hypot(double x, double y);
LOCKSTEP_API double lockstep_sqrt(double x);
LOCKSTEP_API double lockstep_fmod(double x, double y);
LOCKSTEP_API double lockstep_floor(double x);
LOCKSTEP_API double lockstep_ceil(double x);
LOCKSTEP_API double lockstep_round(double x);
LOCKSTEP_API double lockstep_trunc(double x);
LOCKSTEP_API double lockstep_fmin(double x, double y);
LOCKSTEP_API double lockstep_fmax(double x, double y);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_DETMATH_H */
