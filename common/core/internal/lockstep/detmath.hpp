// Deterministic math for the simulation: only + - * / and sqrt, which IEEE-754 rounds exactly
// the same everywhere. libm's sin/cos differ between libraries and versions, so these are ours.
#pragma once

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

/// sin(x) for x in [-pi, pi]; absolute error below 1e-6. Folds into [-pi/2, pi/2], then an
/// odd Taylor polynomial of degree 11 in Horner form (fixed evaluation order, no FMA).
constexpr float sin(float x) {
  if (x > kHalfPi) x = kPi - x;
  if (x < -kHalfPi) x = -kPi - x;
  const float x2 = x * x;
  float p = -2.5052108385441718775e-8f;
  p = p * x2 + 2.7557319223985890653e-6f;
  p = p * x2 - 1.9841269841269841270e-4f;
  p = p * x2 + 8.3333333333333333333e-3f;
  p = p * x2 - 1.6666666666666666667e-1f;
  return x + x * x2 * p;
}

/// cos(x) for x in [-pi, pi], through sin.
constexpr float cos(float x) {
  return sin(wrap_angle(x + kHalfPi));
}

}  // namespace lockstep::detmath
