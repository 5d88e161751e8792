// The simulation's own PRNG: the C++ standard fixes engines but not distributions, so the few
// lines that turn bits into numbers are ours and give the same results everywhere.
#pragma once

#include <cstdint>

#include "lockstep/export.h"

namespace lockstep {

/// PCG32 (O'Neill, XSH-RR output, 64-bit state). Plain data: it lives inside hashed state.
struct LOCKSTEP_API Rng {
  std::uint64_t state = 0;
  std::uint64_t inc = 1;  ///< stream selector, always odd

  /// Seeds as the PCG reference does: the same (seed, stream) gives the same sequence everywhere.
  static constexpr Rng seeded(std::uint64_t seed, std::uint64_t stream = 0x5851f42d4c957f2dULL) {
    Rng r{0, (stream << 1) | 1u};
    r.next_u32();
    r.state += seed;
    r.next_u32();
    return r;
  }

  constexpr std::uint32_t next_u32() {
    const std::uint64_t old = state;
    state = old * 6364136223846793005ULL + inc;
    const auto xorshifted = static_cast<std::uint32_t>(((old >> 18u) ^ old) >> 27u);
    const auto rot = static_cast<std::uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
  }

  /// Uniform in [0, bound) without modulo bias (Lemire's multiply-shift with rejection).
  constexpr std::uint32_t below(std::uint32_t bound) {
    std::uint64_t m = std::uint64_t{next_u32()} * bound;
    auto low = static_cast<std::uint32_t>(m);
    if (low < bound) {
      const std::uint32_t threshold = (0u - bound) % bound;
      while (low < threshold) {
        m = std::uint64_t{next_u32()} * bound;
        low = static_cast<std::uint32_t>(m);
      }
    }
    return static_cast<std::uint32_t>(m >> 32);
  }

  /// Uniform float in [0, 1) with 24 random bits: exact, no rounding involved.
  constexpr float unit() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }

  /// Uniform float in [lo, hi).
  constexpr float range(float lo, float hi) { return lo + (hi - lo) * unit(); }
};

/// SplitMix64 finalizer: a stateless mix for deriving per-tick values from (seed, tick).
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace lockstep
