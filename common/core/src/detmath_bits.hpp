// The bit-level helpers and special values lockstep's math shares between its files
// (detmath.cpp, detmath_exact.cpp). Internal: not installed.
#pragma once

#include <cstdint>

namespace lockstep::detmath_bits {

// __builtin_bit_cast, not std::bit_cast: emscripten's C++ library has no <bit> cast.
inline std::uint32_t bits(float f) { return __builtin_bit_cast(std::uint32_t, f); }
inline float from_bits(std::uint32_t u) { return __builtin_bit_cast(float, u); }
inline std::uint64_t bits(double d) { return __builtin_bit_cast(std::uint64_t, d); }
inline double from_bits(std::uint64_t u) { return __builtin_bit_cast(double, u); }
inline double fabs_d(double x) { return from_bits(static_cast<std::uint64_t>(bits(x) & 0x7fffffffffffffffULL)); }
/// 2^n as a double, for -1022 <= n <= 1023.
inline double pow2(int n) { return from_bits(static_cast<std::uint64_t>(n + 1023) << 52); }
inline const float kInf = from_bits(std::uint32_t{0x7f800000u});
// Every NaN result: one bit pattern, whatever the input's. The CPUs' own NaNs differ (x86's
// inf - inf is 0xffc00000, aarch64's 0x7fc00000; wasm leaves it open), and a NaN's bits end up in
// a hashed state as any other float's.
inline const float kNaN = from_bits(std::uint32_t{0x7fc00000u});
inline const double kNaN64 = from_bits(std::uint64_t{0x7ff8000000000000u});

// The exact functions, one definition for both formats (detmath_exact.cpp's binary32 ones and
// detmath64.cpp's binary64 ones): the format's fields, then the functions on its bits.
template <typename F>
struct Format;
template <>
struct Format<float> {
  using U = std::uint32_t;
  static constexpr int kMantissa = 23, kBias = 127, kExponentMask = 0xff;
  static float nan() { return kNaN; }
};
template <>
struct Format<double> {
  using U = std::uint64_t;
  static constexpr int kMantissa = 52, kBias = 1023, kExponentMask = 0x7ff;
  static double nan() { return kNaN64; }
};

template <typename F>
bool is_nan(F x) {
  using U = typename Format<F>::U;
  const U abs = bits(x) & ~(U{1} << (8 * sizeof(U) - 1)), inf = U(Format<F>::kExponentMask) << Format<F>::kMantissa;
  return abs > inf;
}

template <typename F>
F trunc_exact(F x) {
  using T = Format<F>;
  using U = typename T::U;
  const U u = bits(x), frac = (U{1} << T::kMantissa) - 1, sign = U{1} << (8 * sizeof(U) - 1);
  const int e = static_cast<int>((u >> T::kMantissa) & U(T::kExponentMask)) - T::kBias;
  if (e >= T::kMantissa) return e == T::kBias + 1 && (u & frac) ? T::nan() : x;  // integral, inf or NaN
  if (e < 0) return from_bits(static_cast<U>(u & sign));                              // |x| < 1: a signed zero
  return from_bits(static_cast<U>(u & ~(frac >> e)));
}

template <typename F>
F floor_exact(F x) {
  const F t = trunc_exact(x);
  return (bits(x) >> (8 * sizeof(F) - 1)) && t != x ? t - F(1) : t;
}

template <typename F>
F ceil_exact(F x) {
  const F t = trunc_exact(x);  // keeps x's sign: ceil(-0.5) = -0
  return !(bits(x) >> (8 * sizeof(F) - 1)) && t != x ? t + F(1) : t;
}

/// Rounded half away from zero.
template <typename F>
F round_exact(F x) {
  using T = Format<F>;
  using U = typename T::U;
  const U u = bits(x), frac = (U{1} << T::kMantissa) - 1, sign = U{1} << (8 * sizeof(U) - 1);
  const U one = U(T::kBias) << T::kMantissa;
  const int e = static_cast<int>((u >> T::kMantissa) & U(T::kExponentMask)) - T::kBias;
  if (e >= T::kMantissa) return e == T::kBias + 1 && (u & frac) ? T::nan() : x;
  if (e < -1) return from_bits(static_cast<U>(u & sign));        // |x| < 1/2: a signed zero
  if (e == -1) return from_bits(static_cast<U>((u & sign) | one));  // [1/2, 1): +-1
  // Half a unit added at the units bit, then the fraction cut: ties go away from zero (a carry
  // into the exponent is the next power of two, as it should be).
  return from_bits(static_cast<U>((u + ((U{1} << (T::kMantissa - 1)) >> e)) & ~(frac >> e)));
}

/// The smaller (or larger) of x and y, the number when one is NaN, -0 below +0.
template <typename F>
F fmin_exact(F x, F y) {
  if (is_nan(x)) return is_nan(y) ? Format<F>::nan() : y;
  if (is_nan(y)) return x;
  if (x == y) return (bits(x) >> (8 * sizeof(F) - 1)) ? x : y;
  return x < y ? x : y;
}
template <typename F>
F fmax_exact(F x, F y) {
  if (is_nan(x)) return is_nan(y) ? Format<F>::nan() : y;
  if (is_nan(y)) return x;
  if (x == y) return (bits(x) >> (8 * sizeof(F) - 1)) ? y : x;
  return x > y ? x : y;
}

}  // namespace lockstep::detmath_bits
