// Angles for the built-in games, over lockstep's math (lockstep/detmath.h): only + - * / and
// functions that give the same bits everywhere. libm's sin/cos differ between libraries,
// versions and CPUs.
#pragma once

#include "lockstep/detmath.h"

namespace lockstep::detmath {

inline constexpr float kPi = 3.14159265358979323846f;
inline constexpr float kTwoPi = 6.28318530717958647692f;
inline constexpr float kHalfPi = 1.57079632679489661923f;

/// Wraps an angle into [-pi, pi) with at most one add: valid for |a| < 3 pi.
constexpr float wrap_angle(float a) {
  if (a >= kPi) a -= kTwoPi;
  if (a < -kPi) a += kTwoPi;
  return a;
}

/// Blends angle a toward b by t in [0, 1] along the shorter arc; result in [-pi, pi).
constexpr float lerp_angle(float a, float b, float t) {
  return wrap_angle(a + wrap_angle(b - a) * t);
}

/// sin and cos: lockstep's correctly rounded ones (lockstep/detmath.h), for any x.
inline float sin(float x) { return lockstep_sinf(x); }
inline float cos(float x) { return lockstep_cosf(x); }

}  // namespace lockstep::detmath
