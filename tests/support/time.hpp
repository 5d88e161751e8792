// Durations for the session layer's clocks, which count nanoseconds.
#pragma once

#include <cstdint>

namespace lockstep::testing {

/// Nanoseconds in a millisecond.
inline constexpr std::int64_t kMs = 1'000'000;

}  // namespace lockstep::testing
