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
/// A positive normal double's bits u as 2^e m, m in [sqrt(1/2), sqrt(2)), for log's table
/// (detmath_log_table.inc): e and m from one subtraction of sqrt(1/2)'s bits (rounded up; the
/// difference's exponent field is e, what is left m's exponent), c = m rounded to 8 fraction bits
/// of its binade (half up) and its row i (0..256; 150 for c = 1) from m's bits: no compare, no
/// conversion. The binary32 logf and log2f and the binary64 log family share it.
struct LogSplit {
  int e, i;
  double m, c;
};
inline LogSplit log_split(std::uint64_t u) {
  const std::uint64_t t = u - std::uint64_t{0x3fe6a09e667f3bcd};
  const std::uint64_t mu = u - (t & std::uint64_t{0xfff0000000000000});
  const std::uint64_t cu = (mu + (std::uint64_t{1} << 43)) & ~((std::uint64_t{1} << 44) - 1);
  return {static_cast<int>(static_cast<std::int64_t>(t) >> 52), static_cast<int>(cu >> 44) - 0x3fe6a, from_bits(mu),
          from_bits(cu)};
}
inline const float kInf = from_bits(std::uint32_t{0x7f800000u});
// Every NaN result: one bit pattern, whatever the input's. The CPUs' own NaNs differ (x86's
// inf - inf is 0xffc00000, aarch64's 0x7fc00000; wasm leaves it open), and a NaN's bits end up in
// a hashed state as any other float's.
inline const float kNaN = from_bits(std::uint32_t{0x7fc00000u});
inline const double kNaN64 = from_bits(std::uint64_t{0x7ff8000000000000u});

// Double-double arithmetic's exact steps (a value as the unevaluated sum hi + lo), shared by the
// binary64 functions (detmath64.cpp), powf's log (detmath.cpp) and hypotf (detmath_exact.cpp).
struct DD {
  double hi, lo;
};
/// a + b exactly, for |a| >= |b| (or a = 0).
[[gnu::always_inline]] inline DD quick_sum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}
/// a + b exactly (Knuth).
[[gnu::always_inline]] inline DD two_sum(double a, double b) {
  const double s = a + b, v = s - a;
  return {s, (a - (s - v)) + (b - v)};
}
/// a * b exactly (Dekker): each factor split into halves of 26 bits whose products are exact.
/// |a|, |b| < 2^995, so that the splitting product cannot overflow (every caller's are far below).
[[gnu::always_inline]] inline DD two_prod(double a, double b) {
  const double ca = 134217729.0 * a, ah = ca - (ca - a), al = a - ah;
  const double cb = 134217729.0 * b, bh = cb - (cb - b), bl = b - bh;
  const double p = a * b;
  return {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
}

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

/// x - n y for the integer n that x / y truncates to, exactly: in integers, the mantissas with their
/// implicit bit (subnormals normalized), 11 bits of the quotient at a time (the remainder stays
/// below 2^64), the result normalized back, a zero with x's sign.
template <typename F>
F fmod_exact(F x, F y) {
  using T = Format<F>;
  using U = typename T::U;
  const U sign = U{1} << (8 * sizeof(U) - 1), inf = U(T::kExponentMask) << T::kMantissa;
  const U implicit = U{1} << T::kMantissa, frac = implicit - 1;
  U ux = bits(x), uy = bits(y);
  const U sx = ux & sign;
  ux &= ~sign;
  uy &= ~sign;
  if (uy == 0 || ux >= inf || uy > inf) return T::nan();
  if (ux < uy) return x;  // |x| < |y| (or y infinite)
  int ex = static_cast<int>(ux >> T::kMantissa), ey = static_cast<int>(uy >> T::kMantissa);
  auto mantissa = [&](U v, int& e) -> std::uint64_t {
    if (e == 0) {
      e = 1;
      while (!(v & implicit)) {
        v <<= 1;
        --e;
      }
      return v;
    }
    return (v & frac) | implicit;
  };
  const std::uint64_t mx = mantissa(ux, ex), my = mantissa(uy, ey);
  std::uint64_t r = mx % my;  // (mx 2^(ex - ey)) mod my
  for (int d = ex - ey; d > 0;) {
    const int s = d < 11 ? d : 11;
    r = (r << s) % my;
    d -= s;
  }
  if (r == 0) return from_bits(sx);
  int e = ey;
  while (!(r & implicit)) {
    r <<= 1;
    --e;
  }
  const U out = e > 0 ? static_cast<U>((static_cast<U>(r) & frac) | (static_cast<U>(e) << T::kMantissa))
                      : static_cast<U>(r >> (1 - e));  // subnormal: exact, the bits shifted out are zeros
  return from_bits(static_cast<U>(out | sx));
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
