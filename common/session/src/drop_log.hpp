// Dropped messages, one rule for both sides of a session: every drop is counted by its reason,
// the first few of each reason and every 1000th after are logged, and a message that failed
// decoding is counted under the reason its DecodeError maps to.
#pragma once

#include <array>
#include <cstdint>
#include <numeric>

#include "lockstep/protocol.hpp"

namespace lockstep {

inline constexpr std::uint64_t kLogFirstDrops = 10;

/// Whether the n-th drop of one reason gets a log line: the first kLogFirstDrops, then every 1000th.
constexpr bool drop_worth_logging(std::uint64_t n) { return n <= kLogFirstDrops || n % 1000 == 0; }

/// Drops of every reason together.
template <std::size_t N>
std::uint64_t total_of(const std::array<std::uint64_t, N>& by_reason) {
  return std::accumulate(by_reason.begin(), by_reason.end(), std::uint64_t{0});
}

/// Which drop reason each kind of decoding failure counts as, on one side and channel.
template <class Reason>
struct DecodeDrops {
  Reason too_large, out_of_range, unknown_base, malformed;
  [[nodiscard]] constexpr Reason operator()(protocol::DecodeError e) const {
    switch (e) {
      case protocol::DecodeError::TooLarge: return too_large;
      case protocol::DecodeError::FieldOutOfRange: return out_of_range;
      case protocol::DecodeError::UnknownBase: return unknown_base;
      default: return malformed;
    }
  }
};

}  // namespace lockstep
