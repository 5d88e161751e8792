// What the files of lockstep's binary64 math share (detmath64.cpp: exp, log, pow, atan and the
// rest; detmath64_trig.cpp: sin, cos, tan): the constants and tables (detmath64_constants.inc),
// the exact integer and scaling steps, and double-double arithmetic. Each file takes its own copy
// (an unnamed namespace), so every call is inlined where it is used, as in one file.
#pragma once

#include <cstdint>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "detmath_bits.hpp"

namespace {

using namespace lockstep::detmath_bits;

__extension__ typedef unsigned __int128 u128;  // GCC and Clang on every target lockstep builds for
__extension__ typedef __int128 i128;

#include "detmath64_constants.inc"
#include "detmath_asin_taylor.inc"
#include "detmath_log_table.inc"

const double kInf64 = from_bits(std::uint64_t{0x7ff0000000000000});
constexpr std::uint64_t kAbs = std::uint64_t{0x7fffffffffffffff};
constexpr std::uint64_t kInfBits = std::uint64_t{0x7ff0000000000000};

inline double copysign_d(double v, double sign) { return from_bits((bits(v) & kAbs) | (bits(sign) & ~kAbs)); }

/// v cut to its first 26 significant bits (its low 27 cleared): two such values multiply exactly, so
/// a product's split (v = high26(v) + the rest) costs a mask instead of Dekker's splitting.
/// On x86-64 the mask is applied in the SSE register (andpd), where v already is: moving it to an
/// integer register and back lengthens the chain by several cycles. A bitwise and either way, so
/// the same bits on every machine.
#if defined(__SSE2__)
inline double high26(double v) {
  const __m128d m = _mm_castsi128_pd(_mm_set1_epi64x(static_cast<long long>(0xfffffffff8000000ULL)));
  return _mm_cvtsd_f64(_mm_and_pd(_mm_set_sd(v), m));
}
#else
inline double high26(double v) { return from_bits(bits(v) & std::uint64_t{0xfffffffff8000000}); }
#endif

/// v rounded to the nearest integer (ties to even), |v| < 2^31, as an int and as a double, from
/// one addition of 1.5 2^52 (its last bits hold the integer; taking the constant away again is
/// exact): no conversion from an int.
struct Nearest {
  int k;
  double kd;
};
inline Nearest nearest(double v) {
  const double t = v + 0x1.8p52;
  return {static_cast<int>(static_cast<std::uint32_t>(bits(t))), t - 0x1.8p52};
}
inline int nearest_int(double v) { return nearest(v).k; }

/// v * 2^n with one rounding at most (none while the result is normal), |n| <= 2100.
inline double scale(double v, int n) {
  if (n > 1023) {
    v *= 0x1p1023;
    n -= 1023;
    if (n > 1023) {
      v *= 0x1p1023;
      n -= 1023;
      if (n > 1023) n = 1023;
    }
  } else if (n < -1022) {  // 2^-969 first keeps v normal, so only the last step rounds
    v *= 0x1p-969;
    n += 969;
    if (n < -1022) {
      v *= 0x1p-969;
      n += 969;
      if (n < -1022) n = -1022;
    }
  }
  return v * pow2(n);
}

// --- double-double arithmetic (its exact steps, DD, quick_sum, two_sum, two_prod: detmath_bits.hpp)
// Each a few operations: inlined into every caller (GCC would call the larger ones out of line,
// and the call costs as much as the arithmetic).
#define LOCKSTEP_DD inline __attribute__((always_inline))

LOCKSTEP_DD DD add(DD a, DD b) {
  DD s = two_sum(a.hi, b.hi);
  const DD t = two_sum(a.lo, b.lo);
  s = quick_sum(s.hi, s.lo + t.hi);
  return quick_sum(s.hi, s.lo + t.lo);
}
LOCKSTEP_DD DD add(DD a, double b) {
  const DD s = two_sum(a.hi, b);
  return quick_sum(s.hi, s.lo + a.lo);
}
LOCKSTEP_DD DD neg(DD a) { return {-a.hi, -a.lo}; }
LOCKSTEP_DD DD mul(DD a, DD b) {
  const DD p = two_prod(a.hi, b.hi);
  return quick_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}
LOCKSTEP_DD DD mul(DD a, double b) {
  const DD p = two_prod(a.hi, b);
  return quick_sum(p.hi, p.lo + a.lo * b);
}
/// a / b: the quotient from b.hi's reciprocal, corrected once from the remainder (exact to 2^-105
/// |a|), so one division instead of two or three; relative error about 2^-100.
LOCKSTEP_DD DD div(DD a, DD b) {
  const double inv = 1.0 / b.hi;
  const double q = a.hi * inv;
  const DD p = two_prod(q, b.hi);  // a.hi - p.hi is exact: q b.hi is within 2 ulps of a.hi
  return quick_sum(q, (((a.hi - p.hi) - p.lo) + (a.lo - q * b.lo)) * inv);
}
LOCKSTEP_DD DD sqrt_dd(DD a) {  // a.hi > 0: the root and one Newton correction from the exact remainder
  const double s = __builtin_sqrt(a.hi);
  const DD r = add(a, neg(two_prod(s, s)));
  return quick_sum(s, r.hi / (2.0 * s));
}

}  // namespace
