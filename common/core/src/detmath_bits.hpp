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

}  // namespace lockstep::detmath_bits
