// lockstep's math (lockstep/detmath.h), the functions that are exact or decided exactly: sqrt,
// fmod, floor, ceil, round, trunc, fmin and fmax in integers or with one IEEE operation, and hypot,
// whose rounding boundaries are compared exactly. Like detmath.cpp, compiled with -ffp-contract=off
// and without -ffast-math, calling nothing from libm.
#include <cstdint>

#include "detmath_bits.hpp"
#include "lockstep/detmath.h"

namespace {

using namespace lockstep::detmath_bits;

// --- hypot ---------------------------------------------------------------------------------------

/// The float nearest sqrt(a2 + b2) (a2, b2 exact squares, not both 0), decided exactly at
/// rounding boundaries: a2 + b2 is compared with the square of the midpoint on each side of the
/// candidate (25 bits, so its square is exact).
float hypot_exact(double a2, double b2) {
  const DD sum = two_sum(a2, b2);  // s + err = a2 + b2 exactly
  const double s = sum.hi, err = sum.lo;
  auto above = [&](double mid) {  // the sign of a2 + b2 - mid^2
    const double m2 = mid * mid;
    if (s > 2 * m2 || m2 > 2 * s) return s > m2 ? 1 : -1;
    const double v = (s - m2) + err;  // s - m2 exact (within a factor of 2): the sign is exact
    return v > 0 ? 1 : (v < 0 ? -1 : 0);
  };
  float f = static_cast<float>(__builtin_sqrt(s));
  for (int i = 0; i < 2; ++i) {  // the candidate is at most one float off
    const std::uint32_t u = bits(f);
    const double fd = f == kInf ? 0x1p128 : static_cast<double>(f);  // inf stands for 2^128
    const double up = f == kInf ? 0x1p129 : (u == 0x7f7fffffu ? 0x1p128 : static_cast<double>(from_bits(u + 1)));
    const double down = f == kInf ? 0x1.fffffep127 : static_cast<double>(from_bits(u - 1));
    const int hi = above((fd + up) / 2), lo = above((fd + down) / 2);
    double to = fd;
    if (hi > 0 || (hi == 0 && (u & 1))) to = up;
    else if (lo < 0 || (lo == 0 && (u & 1))) to = down;
    else break;
    f = to >= 0x1p128 ? kInf : static_cast<float>(to);
  }
  return f;
}

}  // namespace

extern "C" {

float lockstep_hypotf(float x, float y) {
  const std::uint32_t ax = bits(x) & 0x7fffffffu, ay = bits(y) & 0x7fffffffu;
  if (ax == 0x7f800000u || ay == 0x7f800000u) return kInf;
  if (ax > 0x7f800000u || ay > 0x7f800000u) return kNaN;
  if (ax == 0 && ay == 0) return 0.0f;
  const double a = from_bits(ax), b = from_bits(ay);
  return hypot_exact(a * a, b * b);
}

float lockstep_sqrtf(float x) { return x >= 0.0f ? __builtin_sqrtf(x) : kNaN; }  // -0 included

float lockstep_fmodf(float x, float y) { return fmod_exact(x, y); }

float lockstep_truncf(float x) { return trunc_exact(x); }
float lockstep_floorf(float x) { return floor_exact(x); }
float lockstep_ceilf(float x) { return ceil_exact(x); }
float lockstep_roundf(float x) { return round_exact(x); }
float lockstep_fminf(float x, float y) { return fmin_exact(x, y); }
float lockstep_fmaxf(float x, float y) { return fmax_exact(x, y); }

}  // extern "C"
